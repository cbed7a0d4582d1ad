package api

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// streamServer answers the event stream with status and lines, then ends
// the answer.
func streamServer(t *testing.T, status int, lines ...string) (*Client, *string) {
	var query string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		query = r.URL.RawQuery
		w.WriteHeader(status)
		for _, l := range lines {
			_, _ = io.WriteString(w, l+"\n")
		}
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(Config{Address: srv.URL, Retry: Retry{Disabled: true}})
	must.NoError(t, err)
	return c, &query
}

func TestEvents_Stream_EventsThenTheErrorThatEndsIt(t *testing.T) {
	event := `{"Topic":"CSIVolume","Type":"ClaimFreed","Key":"data","Namespace":"default","Index":14,` +
		`"Payload":{"Claim":{"VolumeID":"data","AllocID":"a1","State":"freed"}}}`
	c, query := streamServer(t, http.StatusOK, "{}", event, "{}",
		`{"Error":{"Code":"Gone","Message":"event stream: the events after index 14 are gone"}}`, event)
	events, err := c.Events().Stream(t.Context(), []string{"CSIVolume:data", "Node"}, 13, &QueryOptions{Namespace: "*"})
	must.NoError(t, err)

	var got []StreamEvent
	for item := range events {
		got = append(got, item)
	}
	must.EqOp(t, "index=13&namespace=%2A&topic=CSIVolume%3Adata&topic=Node", *query)
	must.SliceLen(t, 2, got, must.Sprint("heartbeats are skipped; the error line is the last item"))
	must.NoError(t, got[0].Err)
	must.EqOp(t, structs.EventClaimFreed, got[0].Event.Type)
	must.EqOp(t, structs.CSIVolumeClaimStateFreed, got[0].Event.Payload.Claim.State)
	must.EqOp(t, event, string(got[0].Raw))
	must.ErrorIs(t, got[1].Err, structs.ErrGone)
	must.ErrorContains(t, got[1].Err, "after index 14 are gone")
}

func TestEvents_Stream_HungUpIsAnError(t *testing.T) {
	c, _ := streamServer(t, http.StatusOK, "{}")
	events, err := c.Events().Stream(t.Context(), nil, 0, nil)
	must.NoError(t, err)
	item, ok := <-events
	must.True(t, ok)
	must.ErrorIs(t, item.Err, io.ErrUnexpectedEOF)
	must.ErrorContains(t, item.Err, "the agent ended the stream")
	_, ok = <-events
	must.False(t, ok)
}

func TestEvents_Stream_RefusedAtOnce(t *testing.T) {
	c, _ := streamServer(t, http.StatusGone, `{"Code":"Gone","Message":"the oldest index to resume from is 9"}`)
	_, err := c.Events().Stream(t.Context(), nil, 3, nil)
	must.ErrorIs(t, err, structs.ErrGone)
	var ae *Error
	must.ErrorAs[*Error](t, err, &ae)
	must.EqOp(t, http.StatusGone, ae.StatusCode)
}
