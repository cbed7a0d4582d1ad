package command

import (
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// hostpathProviderTable is what plugin hostpath's controller lists, all
// three pages of it: berth's volumes by ID, then the others by external
// ID, whatever the plugin's order.
const hostpathProviderTable = `External ID  Berth Volume        Capacity   Published Nodes       Condition
vol-0001     data                1.0 GiB    hp-node-1, hp-node-2  healthy
vol-0003     logs                512.0 MiB  <none>                not reported
vol-7777     (unknown to berth)  2.0 GiB    <none>                abnormal: backing file missing
vol-8888     (unknown to berth)  unknown    <none>                not reported
vol-9999     (unknown to berth)  1.5 GiB    <none>                not reported
`

func TestStatusCommands_ProviderView(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name        string
		args        []string
		failExt     string   // the message external lists fail with, if any
		wantSuffix  string   // stdout ends with it
		notContains string   // not in stdout
		wantQueries []string // of the external volume list reads
	}{
		{
			name: "volume found on the second page",
			args: []string{"volume", "status", "-verbose", "data"},
			wantSuffix: `
Claims
Alloc ID                              Node ID                               Mode   State         Attempts  Last Error
a11c0001-aaaa-4c4c-8888-00000000000a  8a1c2f3e-1111-4c4c-8888-000000000001  write  taken         0
a11c0002-bbbb-4c4c-8888-00000000000b  8a1c9d00-2222-4c4c-8888-000000000002  read   unpublishing  3         node unpublish: rpc error: node down

Timeline of the claim of alloc a11c0001-aaaa-4c4c-8888-00000000000a (taken)
Step         Time          Gap  Since First
claim-taken  ` + clock(0) + `  -    -

Timeline of the claim of alloc a11c0002-bbbb-4c4c-8888-00000000000b (unpublishing)
No steps recorded

Timeline of the claim of alloc a11c0003-cccc-4c4c-8888-00000000000c (freed)
Step              Time          Gap         Since First
claim-taken       ` + clock(-time.Hour) + `  -           -
release-started   ` + clock(-time.Hour+2*time.Second) + `  +2000.0 ms  2000.0 ms
node-unpublished  ` + clock(-time.Hour+2*time.Second+3*time.Millisecond) + `  +3.0 ms     2003.0 ms
freed             ` + clock(-time.Hour+2*time.Second+9*time.Millisecond) + `  +6.0 ms     2009.0 ms

Provider View
External ID     = vol-0001
Capacity        = 1.0 GiB
Published Nodes = hp-node-1, hp-node-2
Condition       = healthy
`,
			// It stops reading once it has found the volume.
			wantQueries: []string{"plugin_id=hostpath", "next_token=page-2&plugin_id=hostpath"},
		},
		{
			name: "volume not listed by its plugin",
			args: []string{"volume", "status", "-verbose", "data2"},
			wantSuffix: "\nProvider View\n" +
				`Volume "vol-0002" is not listed by plugin "hostpath": the storage provider does not report it; it may have been deleted outside berth` + "\n",
			wantQueries: []string{"plugin_id=hostpath", "next_token=page-2&plugin_id=hostpath", "next_token=page-4&plugin_id=hostpath"},
		},
		{
			name:    "plugin cannot list volumes",
			args:    []string{"volume", "status", "-verbose", "lo"},
			failExt: `plugin "hostpath" cannot list volumes: its controller lacks the LIST_VOLUMES capability`,
			wantSuffix: "\nProvider View\n" +
				`Cannot read the provider view: plugin "hostpath" cannot list volumes: its controller lacks the LIST_VOLUMES capability` + "\n",
			wantQueries: []string{"plugin_id=hostpath"},
		},
		{
			name:        "no provider view without -verbose",
			args:        []string{"volume", "status", "data"},
			wantSuffix:  "node unpublish: rpc error: node down\n",
			notContains: "Provider V",
		},
		{
			name: "volume list marks volumes berth does not know",
			args: []string{"volume", "status", "-verbose"},
			wantSuffix: `ID     Name   Plugin ID  Schedulable  Access Mode         Readers  Writers
data   data   hostpath   true         single-node-writer  0        1
data2  data2  hostpath   false        <none>              0        0
logs   logs   hostpath   true         <none>              0        0

Provider Volumes of Plugin "hostpath"
` + hostpathProviderTable,
			wantQueries: []string{"plugin_id=hostpath", "next_token=page-2&plugin_id=hostpath", "next_token=page-4&plugin_id=hostpath"},
		},
		{
			name:    "volume list when the plugin cannot list",
			args:    []string{"volume", "status", "-verbose"},
			failExt: `plugin "hostpath" cannot list volumes`,
			wantSuffix: "logs   logs   hostpath   true         <none>              0        0\n\n" +
				"Provider Volumes of Plugin \"hostpath\"\nCannot list the plugin's volumes: plugin \"hostpath\" cannot list volumes\n",
			wantQueries: []string{"plugin_id=hostpath"},
		},
		{
			name:        "no provider volumes in the volume list without -verbose",
			args:        []string{"volume", "status"},
			wantSuffix:  "logs   logs   hostpath   true         <none>              0        0\n",
			notContains: "Provider V",
		},
		{
			name: "plugin status lists its volumes",
			args: []string{"plugin", "status", "-verbose", "hostpath"},
			wantSuffix: `
Provider Volumes
` + hostpathProviderTable,
			wantQueries: []string{"plugin_id=hostpath", "next_token=page-2&plugin_id=hostpath", "next_token=page-4&plugin_id=hostpath"},
		},
		{
			name: "plugin without a controller",
			args: []string{"plugin", "status", "-verbose", "hostpath2"},
			wantSuffix: "Nodes\nNone\n\nProvider Volumes\n" +
				`None: plugin "hostpath2" has no controller to list its volumes` + "\n",
		},
		{
			name:    "plugin that cannot list",
			args:    []string{"plugin", "status", "-verbose", "hostpath"},
			failExt: `plugin "hostpath" cannot list volumes`,
			wantSuffix: "\nProvider Volumes\n" +
				`Cannot list the plugin's volumes: plugin "hostpath" cannot list volumes` + "\n",
			wantQueries: []string{"plugin_id=hostpath"},
		},
		{
			name:        "no provider volumes in plugin status without -verbose",
			args:        []string{"plugin", "status", "hostpath"},
			wantSuffix:  "a11c0002  8a1c2f3e  plugin  hostpath    run      running\n",
			notContains: "Provider V",
		},
		{
			name:        "-json stays the API's JSON",
			args:        []string{"volume", "status", "-verbose", "-json", "data"},
			wantSuffix:  "}\n",
			notContains: "Provider V",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.reset()
			if tc.failExt != "" {
				f.failExternal(tc.failExt)
			}
			r := runCLI(t, f.srv.URL, "", tc.args...)
			mustExit(t, r, 0, "")
			must.StrHasSuffix(t, tc.wantSuffix, r.stdout)
			if tc.notContains != "" {
				must.StrNotContains(t, r.stdout, tc.notContains)
			}
			reads := f.readsOf("/v1/volumes/external")
			queries := make([]string, len(reads))
			for i, rd := range reads {
				queries[i] = rd.query
			}
			must.Eq(t, nonNil(tc.wantQueries), queries)
		})
	}
}

func TestStatusCommands_ProviderView_OneLineErrors(t *testing.T) {
	f := newFixture(t)
	f.failExternal("plugin \"hostpath\" cannot list volumes:\n  rpc error: code = Unimplemented")
	r := runCLI(t, f.srv.URL, "", "volume", "status", "-verbose", "data")
	must.EqOp(t, 0, r.code)
	must.StrHasSuffix(t, "\nProvider View\nCannot read the provider view: plugin \"hostpath\" cannot list volumes: rpc error: code = Unimplemented\n", r.stdout)
	must.EqOp(t, 1, strings.Count(r.stdout[strings.Index(r.stdout, "Provider View"):], "\n")-1)
}
