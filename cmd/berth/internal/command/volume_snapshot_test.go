package command

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// tookRe matches how long a snapshot took, which varies run to run.
var tookRe = regexp.MustCompile(`taken in [0-9.]+[µnm]?s\n`)

func TestVolumeSnapshotCreate_Run(t *testing.T) {
	f := newFixture(t)
	created := formatTime(fixtureTime)
	cases := []struct {
		name        string
		args        []string
		wantCode    int
		wantStdout  string
		wantStderr  string // "" for none
		wantBody    string // "" for no write
		wantSecrets []string
	}{
		{
			name: "with name, secrets and parameters",
			args: []string{"volume", "snapshot", "create", "-secret", "token=s3cret", "-parameter", "tier=cold",
				"data", "nightly", "-parameter", "note=a=b,c"},
			wantStdout: `==> Snapshotting volume "data" with plugin "hostpath"...
    Snapshot "snap-vol-0001" taken in X

Snapshot ID   = snap-vol-0001
Plugin ID     = hostpath
Name          = nightly
Source Volume = data (external ID vol-0001)
Size          = 1.0 GiB
Created       = ` + created + `
Ready         = true

Restore it with snapshot_id = "snap-vol-0001" in a volume spec for "berth volume create"
`,
			wantBody:    `{"VolumeID":"data","Name":"nightly","Parameters":{"note":"a=b,c","tier":"cold"}}`,
			wantSecrets: []string{"token=s3cret"},
		},
		{
			name: "by prefix, without a name, not ready yet",
			args: []string{"volume", "snapshot", "create", "lo"},
			wantStdout: `==> Snapshotting volume "logs" with plugin "hostpath"...
    Snapshot "snap-vol-0003" taken in X

Snapshot ID   = snap-vol-0003
Plugin ID     = hostpath
Name          = logs-1772366400
Source Volume = logs (external ID vol-0003)
Size          = 512.0 MiB
Created       = ` + created + `
Ready         = false

Restore it with snapshot_id = "snap-vol-0003" in a volume spec for "berth volume create"
The plugin has not made it ready yet; "berth volume snapshot list -plugin hostpath" shows when it is
`,
			wantBody: `{"VolumeID":"logs"}`,
		},
		{
			name:       "server refuses",
			args:       []string{"volume", "snapshot", "create", "-secret", "token=s3cret", "data2"},
			wantCode:   1,
			wantStdout: "==> Snapshotting volume \"data2\" with plugin \"hostpath\"...\n",
			wantStderr: "Error: snapshot volume \"data2\": plugin \"hostpath\" has no healthy controller; " +
				"run \"berth plugin status hostpath\" and start its controller\n",
			wantBody:    `{"VolumeID":"data2"}`,
			wantSecrets: []string{"token=s3cret"},
		},
		{
			name:       "unknown volume",
			args:       []string{"volume", "snapshot", "create", "nope"},
			wantCode:   1,
			wantStderr: "Error: volume \"nope\" not found; run \"berth volume status\" to list them\n",
		},
		{
			name:       "ambiguous prefix",
			args:       []string{"volume", "snapshot", "create", "da", "nightly"},
			wantCode:   1,
			wantStderr: `Error: prefix "da" matches 2 volumes: data, data2; give more of the ID`,
		},
		{
			name:       "no volume",
			args:       []string{"volume", "snapshot", "create"},
			wantCode:   2,
			wantStderr: "Error: this command takes 1 to 2 arguments\n\nUsage: berth volume snapshot create [options] <volume> [<name>]",
		},
		{
			name:       "too many arguments",
			args:       []string{"volume", "snapshot", "create", "data", "a", "b"},
			wantCode:   2,
			wantStderr: "this command takes 1 to 2 arguments, got 3: data a b",
		},
		{
			name:       "secret without '='",
			args:       []string{"volume", "snapshot", "create", "-secret", "s3cret", "data"},
			wantCode:   2,
			wantStderr: "Error: -secret number 1 has no '='; write -secret key=value\n\nUsage: berth volume snapshot create",
		},
		{
			name:       "secret value with ','",
			args:       []string{"volume", "snapshot", "create", "-secret", "token=s3,cret", "data"},
			wantCode:   2,
			wantStderr: `Error: -secret "token": the value holds ','; secrets sent with volume snapshot create cannot`,
		},
		{
			name:       "parameter without '='",
			args:       []string{"volume", "snapshot", "create", "-parameter", "tier", "data"},
			wantCode:   2,
			wantStderr: `Error: invalid value "tier" for flag -parameter: no '='; write -parameter key=value`,
		},
		{
			name:       "parameter twice",
			args:       []string{"volume", "snapshot", "create", "-parameter", "tier=a", "-parameter", "tier=b", "data"},
			wantCode:   2,
			wantStderr: `flag -parameter: key "tier" is given twice`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.reset()
			r := runCLI(t, f.srv.URL, "", tc.args...)
			mustExit(t, r, tc.wantCode, tc.wantStderr)
			must.EqOp(t, tc.wantStdout, tookRe.ReplaceAllString(r.stdout, "taken in X\n"))
			must.StrNotContains(t, r.stdout+r.stderr, "s3cret")
			f.mustLastWrite(t, tc.wantBody != "", fixtureWrite{method: "POST", path: "/v1/volumes/snapshot",
				body: tc.wantBody, secrets: tc.wantSecrets})
		})
	}
}

func TestVolumeSnapshotCreate_JSON_IsTheSnapshotOnly(t *testing.T) {
	f := newFixture(t)
	r := runCLI(t, f.srv.URL, "", "volume", "snapshot", "create", "-json", "data", "nightly")
	mustExit(t, r, 0, "")
	must.StrHasPrefix(t, "{\n    \"ID\": \"snap-vol-0001\",", r.stdout)
	var got structs.CSISnapshot
	must.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	must.Eq(t, structs.CSISnapshot{ID: "snap-vol-0001", PluginID: "hostpath", Name: "nightly", SourceVolumeID: "data",
		ExternalSourceVolumeID: "vol-0001", SizeBytes: 1 << 30, CreateTime: fixtureTime, IsReady: true}, got)
}

func TestVolumeSnapshotCreate_PrintsProgressWhileWaiting(t *testing.T) {
	old := snapshotProgressEvery
	snapshotProgressEvery = 20 * time.Millisecond
	t.Cleanup(func() { snapshotProgressEvery = old })

	f := newFixture(t)
	r := runCLI(t, f.srv.URL, "", "volume", "snapshot", "create", "data", "slow")
	must.EqOp(t, 0, r.code, must.Sprint(r.stderr))
	lines := strings.Split(r.stdout, "\n")
	must.EqOp(t, `==> Snapshotting volume "data" with plugin "hostpath"...`, lines[0])
	i := 1
	for ; strings.HasPrefix(lines[i], "    Still waiting"); i++ {
		must.StrHasPrefix(t, `    Still waiting for plugin "hostpath" to snapshot "data" (`, lines[i])
	}
	must.Greater(t, 1, i, must.Sprint(r.stdout))
	must.StrHasPrefix(t, `    Snapshot "snap-vol-0001" taken in `, lines[i])
	// Between 150ms and however slow the machine is; never 0s.
	must.RegexMatch(t, regexp.MustCompile(`taken in ([0-9.]+m?s)$`), lines[i])
}

func TestVolumeSnapshotCreate_Unreachable(t *testing.T) {
	r := runCLI(t, "http://127.0.0.1:1", "", "volume", "snapshot", "create", "-secret", "token=s3cret", "data")
	must.EqOp(t, 1, r.code)
	must.EqOp(t, "", r.stdout)
	must.StrContains(t, r.stderr, `Error: look up volume "data": cannot reach berth at http://127.0.0.1:1`)
	must.StrNotContains(t, r.stderr, "s3cret")
}

func TestVolumeSnapshotList_Run(t *testing.T) {
	f := newFixture(t)
	at := func(h int) string { return formatTime(fixtureTime.Add(time.Duration(h) * time.Hour)) }
	header := "Snapshot ID  Plugin ID  Source Volume  Size     Created               Ready\n"
	rows := []string{
		"snap-0001    hostpath   data           1.0 GiB  " + at(0) + "  true\n",
		"snap-0002    hostpath   ext:vol-9999   1.5 GiB  " + at(1) + "  true\n",
		"snap-0003    hostpath   logs           unknown  unknown               false\n",
		"snap-0004    hostpath   (unknown)      512 B    " + at(2) + "  true\n",
		"snap-0005    hostpath   data           1.0 GiB  " + at(3) + "  true\n",
	}
	const extNote = "(ext:<id> is a source volume berth does not know, by the plugin's ID of it)\n"
	cases := []struct {
		name        string
		args        []string
		wantCode    int
		wantStdout  string
		wantStderr  string   // "" for none
		wantQueries []string // of each page read
		wantSecrets []string // on every page read
	}{
		{
			name:        "every page of every plugin",
			args:        []string{"volume", "snapshot", "list"},
			wantStdout:  header + strings.Join(rows, "") + extNote,
			wantQueries: []string{"", "next_token=page-2", "next_token=page-4"},
		},
		{
			name:        "every page of one plugin, with secrets",
			args:        []string{"volume", "snapshot", "list", "-plugin", "hostpath", "-secret", "token=s3cret"},
			wantStdout:  header + strings.Join(rows, "") + extNote,
			wantQueries: []string{"plugin_id=hostpath", "next_token=page-2&plugin_id=hostpath", "next_token=page-4&plugin_id=hostpath"},
			wantSecrets: []string{"token=s3cret"},
		},
		{
			name:        "one page says how to get the next",
			args:        []string{"volume", "snapshot", "list", "-per-page", "2"},
			wantStdout:  header + rows[0] + rows[1] + extNote + "\nMore snapshots follow: for the next page, run the same command with -page-token page-2\n",
			wantQueries: []string{"per_page=2"},
		},
		{
			name:        "middle page",
			args:        []string{"volume", "snapshot", "list", "-per-page", "2", "-page-token", "page-2"},
			wantStdout:  header + rows[2] + rows[3] + "\nMore snapshots follow: for the next page, run the same command with -page-token page-4\n",
			wantQueries: []string{"next_token=page-2&per_page=2"},
		},
		{
			name: "last page has no hint",
			args: []string{"volume", "snapshot", "list", "-per-page", "2", "-page-token", "page-4"},
			wantStdout: "Snapshot ID  Plugin ID  Source Volume  Size     Created               Ready\n" +
				"snap-0005    hostpath   data           1.0 GiB  " + at(3) + "  true\n",
			wantQueries: []string{"next_token=page-4&per_page=2"},
		},
		{
			name:        "a page token without -per-page reads from there to the end",
			args:        []string{"volume", "snapshot", "list", "-page-token", "page-2"},
			wantStdout:  header + rows[2] + rows[3] + rows[4],
			wantQueries: []string{"next_token=page-2", "next_token=page-4"},
		},
		{
			name:        "none",
			args:        []string{"volume", "snapshot", "list", "-plugin", "hostpath2"},
			wantStdout:  "No snapshots\n",
			wantQueries: []string{"plugin_id=hostpath2"},
		},
		{
			name:        "API error",
			args:        []string{"volume", "snapshot", "list", "-page-token", "bogus"},
			wantCode:    1,
			wantStderr:  "Error: next_token \"bogus\" is not one this listing handed out; start again without it\n",
			wantQueries: []string{"next_token=bogus"},
		},
		{
			name:       "ambiguous plugin",
			args:       []string{"volume", "snapshot", "list", "-plugin", "host"},
			wantCode:   1,
			wantStderr: `Error: prefix "host" matches 2 plugins: hostpath, hostpath2; give more of the ID`,
		},
		{
			name:       "unknown plugin",
			args:       []string{"volume", "snapshot", "list", "-plugin", "nope"},
			wantCode:   1,
			wantStderr: `Error: plugin "nope" not found; run "berth plugin status" to list them`,
		},
		{
			name:       "per page zero",
			args:       []string{"volume", "snapshot", "list", "-per-page", "0"},
			wantCode:   2,
			wantStderr: "Error: -per-page 0: give a number of snapshots from 1 to 2147483647, or leave -per-page out to list them all\n\nUsage: berth volume snapshot list",
		},
		{
			name:       "per page negative",
			args:       []string{"volume", "snapshot", "list", "-per-page", "-3"},
			wantCode:   2,
			wantStderr: "Error: -per-page -3: give a number of snapshots from 1 to",
		},
		{
			name:       "per page too large",
			args:       []string{"volume", "snapshot", "list", "-per-page", "2147483648"},
			wantCode:   2,
			wantStderr: "Error: -per-page 2147483648: give a number of snapshots from 1 to 2147483647",
		},
		{
			name:       "per page not a number",
			args:       []string{"volume", "snapshot", "list", "-per-page", "ten"},
			wantCode:   2,
			wantStderr: `Error: invalid value "ten" for flag -per-page: parse error`,
		},
		{
			name:       "an argument",
			args:       []string{"volume", "snapshot", "list", "hostpath"},
			wantCode:   2,
			wantStderr: "Error: this command takes 0 arguments, got 1: hostpath",
		},
		{
			name:       "bad secret",
			args:       []string{"volume", "snapshot", "list", "-secret", "=s3cret"},
			wantCode:   2,
			wantStderr: "Error: -secret number 1 has no key before '='",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.reset()
			r := runCLI(t, f.srv.URL, "", tc.args...)
			mustExit(t, r, tc.wantCode, tc.wantStderr)
			must.EqOp(t, tc.wantStdout, r.stdout)
			must.StrNotContains(t, r.stdout+r.stderr, "s3cret")
			reads := f.readsOf("/v1/volumes/snapshot")
			queries := make([]string, len(reads))
			for i, rd := range reads {
				queries[i] = rd.query
				must.Eq(t, tc.wantSecrets, rd.secrets)
			}
			must.Eq(t, nonNil(tc.wantQueries), queries)
			must.Zero(t, f.count())
		})
	}
}

func TestVolumeSnapshotList_JSON(t *testing.T) {
	f := newFixture(t)
	t.Run("one page is the API's JSON", func(t *testing.T) {
		r := runCLI(t, f.srv.URL, "", "volume", "snapshot", "list", "-per-page", "2", "-page-token", "page-2", "-json")
		must.EqOp(t, 0, r.code, must.Sprint(r.stderr))
		var want, got any
		must.NoError(t, json.Unmarshal(fetch(t, f.srv.URL+"/v1/volumes/snapshot?per_page=2&next_token=page-2"), &want))
		must.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
		must.Eq(t, want, got)
		must.StrContains(t, r.stdout, "\n    \"NextToken\": \"page-4\"")
	})
	t.Run("every page together", func(t *testing.T) {
		r := runCLI(t, f.srv.URL, "", "volume", "snapshot", "list", "-json")
		must.EqOp(t, 0, r.code, must.Sprint(r.stderr))
		var got struct {
			Snapshots []*structs.CSISnapshot
			NextToken *string
		}
		must.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
		must.Eq(t, fixtureSnapshots(), got.Snapshots)
		must.NotNil(t, got.NextToken)
		must.EqOp(t, "", *got.NextToken)
	})
	t.Run("none is an empty list", func(t *testing.T) {
		r := runCLI(t, f.srv.URL, "", "volume", "snapshot", "list", "-plugin", "hostpath2", "-json")
		must.EqOp(t, 0, r.code, must.Sprint(r.stderr))
		must.EqOp(t, "{\n    \"Snapshots\": [],\n    \"NextToken\": \"\"\n}\n", r.stdout)
	})
}

func TestVolumeSnapshotDelete_Run(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name        string
		args        []string
		wantCode    int
		wantStdout  string
		wantStderr  string // "" for none
		wantQuery   string // "" for no write
		wantSecrets []string
	}{
		{"deletes", []string{"volume", "snapshot", "delete", "hostpath", "snap-0001"}, 0,
			"Deleted snapshot \"snap-0001\" of plugin \"hostpath\"\n", "", "plugin_id=hostpath&snapshot_id=snap-0001", nil},
		{"with secrets, flags after the arguments", []string{"volume", "snapshot", "delete", "hostpath2", "snap/0001", "-secret", "token=s3cret"}, 0,
			"Deleted snapshot \"snap/0001\" of plugin \"hostpath2\"\n", "", "plugin_id=hostpath2&snapshot_id=snap%2F0001", []string{"token=s3cret"}},
		{"refused", []string{"volume", "snapshot", "delete", "-secret", "token=s3cret", "hostpath", "snap-busy"}, 1, "",
			"Error: snapshot \"snap-busy\" of plugin \"hostpath\" is in use by volume \"restored\"; delete that volume first\n",
			"plugin_id=hostpath&snapshot_id=snap-busy", []string{"token=s3cret"}},
		{"ambiguous plugin", []string{"volume", "snapshot", "delete", "host", "snap-0001"}, 1, "",
			`Error: prefix "host" matches 2 plugins: hostpath, hostpath2; give more of the ID`, "", nil},
		{"unknown plugin", []string{"volume", "snapshot", "delete", "nope", "snap-0001"}, 1, "",
			`Error: plugin "nope" not found; run "berth plugin status" to list them`, "", nil},
		{"no snapshot", []string{"volume", "snapshot", "delete", "hostpath"}, 2, "",
			"Error: this command takes 2 arguments\n\nUsage: berth volume snapshot delete [options] <plugin> <snapshot>", "", nil},
		{"too many", []string{"volume", "snapshot", "delete", "hostpath", "a", "b"}, 2, "",
			"this command takes 2 arguments, got 3: hostpath a b", "", nil},
		{"bad secret", []string{"volume", "snapshot", "delete", "-secret", "token=s3,cret", "hostpath", "snap-0001"}, 2, "",
			`-secret "token": the value holds ','; secrets sent with volume snapshot delete cannot`, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.reset()
			r := runCLI(t, f.srv.URL, "", tc.args...)
			mustExit(t, r, tc.wantCode, tc.wantStderr)
			must.EqOp(t, tc.wantStdout, r.stdout)
			must.StrNotContains(t, r.stdout+r.stderr, "s3cret")
			f.mustLastWrite(t, tc.wantQuery != "", fixtureWrite{method: "DELETE", path: "/v1/volumes/snapshot",
				query: tc.wantQuery, secrets: tc.wantSecrets})
		})
	}
}

func TestAllPages_StopsOnARepeatedToken(t *testing.T) {
	pages := map[string]struct {
		items []int
		next  string
	}{
		"":   {[]int{1, 2}, "a"},
		"a":  {[]int{3}, "b"},
		"b":  {[]int{4}, "a"},
		"s":  {[]int{9}, "s"},
		"ok": {[]int{5}, ""},
	}
	fetch := func(token string) ([]int, string, error) {
		p, ok := pages[token]
		if !ok {
			return nil, "", errors.New("no such page")
		}
		return p.items, p.next, nil
	}
	_, err := allPages("", fetch, nil)
	must.EqError(t, err, `page 3 hands back next token "a" a second time; the listing would never end`)
	_, err = allPages("s", fetch, nil)
	must.ErrorContains(t, err, `next token "s" a second time`)

	got, err := allPages("ok", fetch, nil)
	must.NoError(t, err)
	must.Eq(t, []int{5}, got)

	got, err = allPages("", fetch, func(items []int) bool { return items[0] == 3 })
	must.NoError(t, err)
	must.Eq(t, []int{1, 2, 3}, got)

	_, err = allPages("nope", fetch, nil)
	must.EqError(t, err, "no such page")
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"page-2":       "page-2",
		"YWJj+/==":     "YWJj+/==",
		"a b":          "'a b'",
		"it's":         `'it'\''s'`,
		"":             "''",
		"$(rm -rf ~)":  "'$(rm -rf ~)'",
		"tok;ls":       "'tok;ls'",
		"k=v,k2=v2:x@": "k=v,k2=v2:x@",
	} {
		must.EqOp(t, want, shellQuote(in), must.Sprint(in))
	}
}
