package httpapi

import (
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

// fill sets every exported field of the value v points to, recursively,
// to something other than its zero value, so that every field a client
// could send is sent.
func fill(v reflect.Value, depth int) {
	if depth > 6 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem(), depth+1)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte("x"))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		fill(k, depth+1)
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Interface:
		v.Set(reflect.ValueOf("x"))
	}
}

// TestAPIClient_SendsOnlyKnownFields: every field the project's api
// client (and so the CLI) sends in a body is one the handlers take;
// decodeBody refuses unknown fields.
func TestAPIClient_SendsOnlyKnownFields(t *testing.T) {
	b := &fakeBackend{replies: map[string]any{
		"CSIVolume.CreateSnapshot": &structs.CSISnapshotCreateResponse{Snapshot: &structs.CSISnapshot{ID: "snap-1"}},
	}}
	srv := httptest.NewServer(New(b, testLogger(t)))
	t.Cleanup(srv.Close)
	c, err := api.NewClient(api.Config{Address: srv.URL})
	must.NoError(t, err)

	var job structs.Job
	fill(reflect.ValueOf(&job), 0)
	_, _, err = c.Jobs().Register(&job)
	must.NoError(t, err, must.Sprint("job register"))

	var vol api.VolumeSpec
	fill(reflect.ValueOf(&vol), 0)
	_, _, err = c.CSIVolumes().Register(&vol)
	must.NoError(t, err, must.Sprint("volume register"))
	_, _, err = c.CSIVolumes().Create(&vol)
	must.NoError(t, err, must.Sprint("volume create"))

	var claim structs.CSIVolumeClaimRequest
	fill(reflect.ValueOf(&claim), 0)
	_, _, err = c.CSIVolumes().Claim(&claim)
	must.NoError(t, err, must.Sprint("volume claim"))

	_, _, err = c.CSIVolumes().CreateSnapshot("x", "nightly", map[string]string{"k": "v"}, nil)
	must.NoError(t, err, must.Sprint("snapshot create"))

	must.EqOp(t, 5, b.count())
}

// TestAPIClient_ACLSendsOnlyKnownFields: the ACL writes of the api
// client send only fields the handlers take, and get back what they
// answer.
func TestAPIClient_ACLSendsOnlyKnownFields(t *testing.T) {
	b := &fakeBackend{replies: aclReplies()}
	srv := httptest.NewServer(New(b, testLogger(t)))
	t.Cleanup(srv.Close)
	c, err := api.NewClient(api.Config{Address: srv.URL})
	must.NoError(t, err)

	var token structs.ACLToken
	fill(reflect.ValueOf(&token), 0)
	token.SecretID = "" // the api client refuses one
	update := token.Copy()
	token.AccessorID = ""
	made, _, err := c.ACLTokens().Create(&token)
	must.NoError(t, err, must.Sprint("token create"))
	must.EqOp(t, "secret-1", made.SecretID)
	sent := b.last(t).args.(*structs.ACLTokenUpsertRequest).Tokens[0]
	must.Eq(t, token.Policies, sent.Policies)
	must.EqOp(t, token.ExpirationTTL, sent.ExpirationTTL)

	updated, _, err := c.ACLTokens().Update(update)
	must.NoError(t, err, must.Sprint("token update"))
	must.EqOp(t, "", updated.SecretID)

	var policy structs.ACLPolicy
	fill(reflect.ValueOf(&policy), 0)
	_, err = c.ACLPolicies().Upsert(&policy)
	must.NoError(t, err, must.Sprint("policy upsert"))

	boot, _, err := c.ACLBootstrap()
	must.NoError(t, err, must.Sprint("bootstrap"))
	must.EqOp(t, "secret-0", boot.SecretID)
	must.EqOp(t, 4, b.count())
}
