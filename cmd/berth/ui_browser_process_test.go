package main_test

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// uiScreenshotEnv names a file that TestProcess_WebUI_VolumeClaimGoesToFreed
// also writes the volume page's PNG to (docs/ui-volume.png is made so).
const uiScreenshotEnv = "BERTH_UI_SCREENSHOT"

// chromiumPath is Debian's chromium (make chromium installs it).
const chromiumPath = "/usr/bin/chromium"

// The screenshot's size: the README shows it.
const uiWidth, uiHeight = 1280, 800

const uiVolumeSpec = `id        = "data"
name      = "data"
type      = "csi"
plugin_id = "hostpath"
capacity_min = "64MiB"
capacity_max = "1GiB"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`

// browser starts headless Chromium for the test, or skips it, saying why,
// where Chromium is missing or cannot start. JavaScript exceptions on the
// page are collected: exceptions() returns them.
func browser(t *testing.T) (ctx context.Context, exceptions func() []string) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		testlog.Skip(t, fmt.Sprintf("no Chromium at %s (make chromium installs Debian's package): %v", chromiumPath, err))
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses its sandbox as root
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	// The first action starts the browser, which lives as long as the
	// context it runs on: this one, not one with a timeout.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		testlog.Skip(t, fmt.Sprintf("Chromium at %s cannot start: %v", chromiumPath, err))
	}

	var mu sync.Mutex
	var seen []string
	thrown := chromedp.Events(ctx, runtime.ExceptionThrown)
	go func() {
		for ev, err := range thrown {
			if err != nil {
				return
			}
			text := ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				text += " " + ev.ExceptionDetails.Exception.Description
			}
			mu.Lock()
			seen = append(seen, text)
			mu.Unlock()
		}
	}()
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// TestProcess_WebUI_VolumeClaimGoesToFreed opens the web UI of a dev agent
// in headless Chromium on a volume claimed by a running job, sees the
// claim taken with links to its allocation and node, stops the job, and
// sees the claim go to freed among the past claims without a reload.
func TestProcess_WebUI_VolumeClaimGoesToFreed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries, starts a dev agent and a browser")
	}
	testlog.NeedRoot(t, "the job's task mounts the volume")
	ctx, exceptions := browser(t)
	bin, a := startDevAgent(t)

	dir := t.TempDir()
	must.NoError(t, os.WriteFile(filepath.Join(dir, "data.hcl"), []byte(uiVolumeSpec), 0o644))
	must.NoError(t, os.WriteFile(filepath.Join(dir, "writer.hcl"), []byte(devWriterJob), 0o644))
	out, errOut, code := berthCLI(t, bin, a, "volume", "create", filepath.Join(dir, "data.hcl"))
	must.Zero(t, code, must.Sprintf("volume create: %s%s", out, errOut))
	out, errOut, code = berthCLI(t, bin, a, "job", "run", filepath.Join(dir, "writer.hcl"))
	must.Zero(t, code, must.Sprintf("job run: %s%s", out, errOut))
	allocs := running(jobAllocs(t, bin, a, "writer"))
	must.Len(t, 1, allocs)
	alloc := allocs[0]

	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	taken := fmt.Sprintf(`#claims-write tr[data-claim=%q][data-state="taken"]`, alloc.ID)
	must.NoError(t, chromedp.Do(ctx,
		chromedp.EmulateViewport(uiWidth, uiHeight),
		chromedp.Navigate(a.httpAddr()+"/"), // redirected to /ui/
		chromedp.WaitVisible(chromedp.CSS(`#nav a[data-section="volumes"]`)),
		chromedp.Navigate(a.httpAddr()+"/ui/#/volumes/data"),
		chromedp.WaitVisible(chromedp.CSS(taken)),
		// The volume's usage, as the client's next collection (every
		// second here) reports it: the task's file and the root dir.
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#usage tr[data-alloc=%q][data-abnormal="false"] td.used`, alloc.ID))),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#usage tr[data-alloc=%q] .b-ok`, alloc.ID))),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`%s a[href="#/allocations/%s"]`, taken, alloc.ID))),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`%s a[href="#/nodes/%s"]`, taken, alloc.NodeID))),
		// The allocation's link: its task, task events and log tail (the
		// task prints the time it wrote, "...Z").
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`%s a[href="#/allocations/%s"]`, taken, alloc.ID))),
		chromedp.WaitVisible(chromedp.CSS(`section[data-task="writer"] .b-ok`)),
		chromedp.Poll[chromedp.Void](`(document.getElementById("log") || {textContent: ""}).textContent.includes("Z\n")`),
		chromedp.Evaluate[chromedp.Void](`location.hash = "#/volumes/data"`),
		chromedp.WaitVisible(chromedp.CSS(taken)),
		// A mark that a reload would wipe.
		chromedp.Evaluate[chromedp.Void](`window.berthTestMark = "same page"`),
	))
	used, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector('#usage tr[data-alloc=%q] td.used').textContent`, alloc.ID)))
	must.NoError(t, err)
	must.RegexMatch(t, regexp.MustCompile(`^\d+\.\d KiB \(0%\)$`), used, must.Sprint("the used bytes of the 64 MiB volume"))
	url, err := chromedp.Run(ctx, chromedp.Location())
	must.NoError(t, err)
	must.StrHasSuffix(t, "/ui/#/volumes/data", url)

	out, errOut, code = berthCLI(t, bin, a, "job", "stop", "writer")
	must.Zero(t, code, must.Sprintf("job stop: %s%s", out, errOut))

	freed := fmt.Sprintf(`#claims-past tr[data-claim=%q][data-state="freed"]`, alloc.ID)
	must.NoError(t, chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.CSS(freed)),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`%s a[href="#/allocations/%s"]`, freed, alloc.ID))),
		chromedp.WaitVisible(chromedp.CSS(`#claims-write p.empty`)),
	))
	mark, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.berthTestMark || "reloaded"`))
	must.NoError(t, err)
	must.EqOp(t, "same page", mark)

	// The screenshot goes into the test's temp dir; the file read back is
	// a PNG of the page's size.
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	must.NoError(t, err)
	shotPath := filepath.Join(t.TempDir(), "ui-volume.png")
	must.NoError(t, os.WriteFile(shotPath, shot, 0o644))
	written, err := os.ReadFile(shotPath)
	must.NoError(t, err)
	img, err := png.DecodeConfig(bytes.NewReader(written))
	must.NoError(t, err)
	must.EqOp(t, uiWidth, img.Width)
	must.EqOp(t, uiHeight, img.Height)
	if path := os.Getenv(uiScreenshotEnv); path != "" {
		must.NoError(t, os.WriteFile(path, shot, 0o644))
		t.Logf("wrote the volume page's screenshot to %s", path)
	}
	must.SliceEmpty(t, exceptions(), must.Sprint("JavaScript exceptions on the page"))

	// The API agrees: the servers dropped the freed claim.
	var vol structs.CSIVolume
	must.NoError(t, fetchJSON(a.httpAddr()+"/v1/volume/csi/data", &vol))
	must.False(t, claimedBy(&vol, alloc.ID))
}
