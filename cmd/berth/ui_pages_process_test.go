package main_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/cmd/berth/internal/ui"
	"github.com/berth-csi/berth/structs"
)

// xss is markup that the UI must show as text: were it inserted as HTML,
// an element with its id would appear in the page.
const xss = `<img src="x" id="xss">`

// uiFakeAPI serves the web UI and, in place of an agent, the two reads of
// the page of the volume "data": the volume, whose name and claim's last
// error are markup, and the nodes, which it refuses as an agent with ACLs
// does a token without node:read (its message markup too). A blocking
// query for the index it holds waits until the test ends.
func uiFakeAPI(t *testing.T) string {
	t.Helper()
	vol := structs.CSIVolume{ID: "data", Namespace: structs.DefaultNamespace, Name: xss, PluginID: "hostpath",
		ModifyIndex: 7, PastClaims: map[string]*structs.CSIVolumeClaim{
			"5a1c9a4e-0000-4000-8000-000000000001": {AllocID: "5a1c9a4e-0000-4000-8000-000000000001", NodeID: "n1",
				Mode: structs.CSIVolumeClaimWrite, State: structs.CSIVolumeClaimStateUnpublishing,
				Attempts: 2, LastError: xss, UpdatedAt: time.Now()},
		}}
	done := make(chan struct{})
	api := http.NewServeMux()
	api.HandleFunc("GET /v1/volume/csi/data", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("index") == "7" {
			select { // nothing changes: the long poll waits
			case <-r.Context().Done():
			case <-done:
			}
		}
		w.Header().Set("X-Berth-Index", "7")
		_ = json.NewEncoder(w).Encode(vol)
	})
	api.HandleFunc("GET /v1/nodes", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"Code":"PermissionDenied","Message":` + strconv.Quote("Permission denied: node:read "+xss) + `}`))
	})
	srv := httptest.NewServer(ui.Mount(api))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) }) // first: the long polls answer, then the server closes
	return srv.URL
}

// TestProcess_WebUI_Pages runs the web UI's pages in headless Chromium on a
// stand-in API (no agent, no root):
//   - every value from the API is text: markup in a volume's name, a
//     claim's last error and a refusal's message makes no element;
//   - a 403 on a part of a page (the nodes, on a volume's page) hides that
//     part and says why, and the volume still shows; the token box stays
//     closed, being for a page the token cannot read at all;
//   - a page's polling leaves no listener behind on its signal, and a
//     volume's page remembers a bounded number of freed claims.
func TestProcess_WebUI_Pages(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	ctx, exceptions := browser(t)
	base := uiFakeAPI(t)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()

	must.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui/#/volumes/data"),
		chromedp.WaitVisible(chromedp.CSS(`#claims-past tr[data-state="unpublishing"] .error-text`)),
		chromedp.WaitVisible(chromedp.CSS(`main .hidden-parts`)),
	))
	for _, probe := range []struct{ expr, want string }{
		{`String(document.getElementById("xss"))`, "null"},
		{`document.querySelector("#claims-past .error-text").textContent`, xss},
		{`document.querySelector("main .page-head h1").textContent`, "data"},
		{`document.querySelector("main .hidden-parts").textContent.includes("node:read " + ` + strconv.Quote(xss) + `) + ""`, "true"},
		{`String(document.getElementById("token-panel").hidden)`, "true"},
	} {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](probe.expr))
		must.NoError(t, err)
		must.EqOp(t, probe.want, got, must.Sprint(probe.expr))
	}

	// 100 sleeps of a poll loop on one signal; then what is left on it.
	_, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`(async () => {
		const { sleep } = await import('/ui/js/api.js');
		window.pollSignal = new AbortController().signal;
		for (let i = 0; i < 100; i++) await sleep(1, window.pollSignal);
	})()`, chromedp.EvalAwaitPromise))
	must.NoError(t, err)
	left, err := chromedp.Run(ctx, chromedp.EvaluateAsDevTools[int](`(getEventListeners(window.pollSignal).abort || []).length`))
	must.NoError(t, err)
	must.Zero(t, left, must.Sprint("abort listeners left on the page's signal by its sleeps"))

	// A volume whose claims come and go 200 times.
	kept, err := chromedp.Run(ctx, chromedp.Evaluate[[]any](`(async () => {
		const { claimTracker, maxFreed } = await import('/ui/js/pages/claims.js');
		const tr = new claimTracker();
		for (let i = 0; i < 200; i++) {
			tr.update({ ModifyIndex: 2 * i + 1, PastClaims: { ['alloc-' + i]: { State: 'unpublishing' } } });
			tr.update({ ModifyIndex: 2 * i + 2 });
		}
		return [tr.seen.size, maxFreed, tr.seen.has('alloc-199'), tr.seen.has('alloc-0')];
	})()`, chromedp.EvalAwaitPromise))
	must.NoError(t, err)
	must.Eq(t, []any{float64(20), float64(20), true, false}, kept)
	must.SliceEmpty(t, exceptions(), must.Sprint("JavaScript exceptions on the page"))
}
