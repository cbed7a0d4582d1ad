package command

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

const (
	keyOld = "0c0ffee0-1111-4aaa-8bbb-000000000001"
	keyNew = "0c0ffee0-2222-4aaa-8bbb-000000000002"
)

// newKeyringServer answers the keyring routes as the handlers shape them;
// f records the rotations.
func (f *fixture) newKeyringServer(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/operator/keyring/keys", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 12, []*structs.RootKeyMeta{
			{KeyID: keyOld, State: structs.RootKeyStateInactive, CreateTime: fixtureTime, CreateIndex: 3, ModifyIndex: 12},
			{KeyID: keyNew, State: structs.RootKeyStateActive, CreateTime: fixtureTime.Add(time.Hour), CreateIndex: 12, ModifyIndex: 12},
		})
	})
	mux.HandleFunc("PUT /v1/operator/keyring/rotate", func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		resp := &structs.KeyringRotateResponse{Key: &structs.RootKeyMeta{KeyID: keyNew, State: structs.RootKeyStateActive,
			CreateTime: fixtureTime.Add(time.Hour), CreateIndex: 12, ModifyIndex: 12}, WriteMeta: structs.WriteMeta{Index: 12}}
		if r.URL.Query().Get("full") == "true" {
			resp.Reencrypted, resp.Index = 3, 13
		}
		reply(w, int(resp.Index), resp)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		replyError(w, 403, "PermissionDenied", "permission denied: this needs operator write")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestOperatorKeyring_Run(t *testing.T) {
	header := "Key                                   State     Create Time\n"
	newLine := keyNew + "  active    " + formatTime(fixtureTime.Add(time.Hour)) + "\n"
	rotated := "Key                                   State   Create Time\n" +
		keyNew + "  active  " + formatTime(fixtureTime.Add(time.Hour)) + "\n"
	cases := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		contains   []string
		wantStderr string
		wantWrite  fixtureWrite
	}{
		{name: "list", args: []string{"operator", "root", "keyring", "list"},
			wantStdout: header + keyOld + "  inactive  " + formatTime(fixtureTime) + "\n" + newLine},
		{name: "list json", args: []string{"operator", "root", "keyring", "list", "-json"},
			contains: []string{"[\n    {\n        \"KeyID\": \"" + keyOld + "\",", "\"State\": \"active\""}},
		{name: "list takes no argument", args: []string{"operator", "root", "keyring", "list", "x"}, wantCode: 2,
			wantStderr: "Error: "},
		{name: "rotate", args: []string{"operator", "root", "keyring", "rotate"},
			wantStdout: rotated,
			wantWrite:  fixtureWrite{method: "PUT", path: "/v1/operator/keyring/rotate"}},
		{name: "rotate full", args: []string{"operator", "root", "keyring", "rotate", "-full"},
			wantStdout: rotated + "Encrypted the secrets of 3 volumes again with the new key\n",
			wantWrite:  fixtureWrite{method: "PUT", path: "/v1/operator/keyring/rotate", query: "full=true"}},
		{name: "rotate json", args: []string{"operator", "root", "keyring", "rotate", "-json"},
			contains:  []string{"\"Key\": {\n        \"KeyID\": \"" + keyNew + "\""},
			wantWrite: fixtureWrite{method: "PUT", path: "/v1/operator/keyring/rotate"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fixture{}
			srv := f.newKeyringServer(t)
			r := runCLI(t, srv.URL, "", tc.args...)
			mustExit(t, r, tc.wantCode, tc.wantStderr)
			mustStdout(t, r, tc.wantStdout, tc.contains)
			f.mustLastWrite(t, tc.wantWrite.method != "", tc.wantWrite)
		})
	}
}

func TestOperatorKeyring_Refused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		replyError(w, 403, "PermissionDenied", "permission denied: this needs operator write")
	}))
	t.Cleanup(srv.Close)
	r := runCLI(t, srv.URL, "", "operator", "root", "keyring", "rotate")
	mustExit(t, r, 1, "operator write")
	must.EqOp(t, "", r.stdout)
}
