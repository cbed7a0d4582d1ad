package loadtest

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// SaveProfile fetches a runtime profile of agent a (its servers run with
// -enable-debug) from /debug/pprof/NAME?QUERY and writes it to
// c.LogDir/FILE, for `go tool pprof` after the run. It returns the path.
func (c *Cluster) SaveProfile(a *Agent, name, query, file string) (string, error) {
	url := a.HTTPAddr() + "/debug/pprof/" + name
	if query != "" {
		url += "?" + query
	}
	resp, err := http.Get(url)
	if err != nil {
		return "", fmt.Errorf("loadtest: profile %s of %s: %w", name, a.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return "", fmt.Errorf("loadtest: profile %s of %s: %s: %s", name, a.Name, resp.Status, body)
	}
	path := filepath.Join(c.LogDir, file)
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return "", fmt.Errorf("loadtest: profile %s of %s: %w", name, a.Name, err)
	}
	return path, f.Close()
}

// CPUProfile starts saving a CPU profile of agent a over the next d (less
// a second, at least one) into c.LogDir/FILE, and returns what waits for
// it to be saved; the test logs the path, or fails with why not.
func (c *Cluster) CPUProfile(t testing.TB, a *Agent, d time.Duration, file string) func() {
	secs := max(1, int(d.Seconds())-1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		path, err := c.SaveProfile(a, "profile", fmt.Sprintf("seconds=%d", secs), file)
		if err != nil {
			t.Errorf("%v", err)
			return
		}
		t.Logf("the CPU profile of %s: %s", a.Name, path)
	}()
	return func() { <-done }
}
