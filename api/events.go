package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/berth-csi/berth/structs"
)

// eventStreamEndpoint is the event stream's route.
const eventStreamEndpoint = "/v1/event/stream"

// Events reads the cluster's event stream.
type Events struct{ c *Client }

// Events returns the event stream's endpoints.
func (c *Client) Events() *Events { return &Events{c} }

// StreamEvent is one item of an event stream: an event, with the line the
// agent sent (Raw), or the error that ended the stream (Err, the last
// item).
type StreamEvent struct {
	Event structs.Event
	Raw   json.RawMessage
	Err   error
}

// Stream subscribes to the events after index (0: from now) on topics,
// each "Topic" or "Topic:key" (structs.TopicNode, ...; none, or "*", for
// every topic the token may read), in q's namespace ("*" for all). A
// refusal comes back at once as an *Error: BadRequest, PermissionDenied
// naming a topic the token may not read, or Gone for an index older than
// the server holds (list the objects again, then stream after the index
// the error names, or the list's LastIndex if higher) or one the cluster
// never reached. Then the events come on the channel, oldest first; the
// stream's heartbeats are not passed on.
//
// The channel is closed when the stream ends: when ctx ends (with no
// error item), or after an item whose Err says why (an *Error the agent
// sent, such as Gone when the subscriber fell behind the server's buffer,
// or a broken connection). To resume, stream again after the last event's
// Index: an index's events always come together. The caller must read
// the channel until it is closed or end ctx.
func (e *Events) Stream(ctx context.Context, topics []string, index uint64, q *QueryOptions) (<-chan StreamEvent, error) {
	params := url.Values{}
	for _, t := range topics {
		params.Add("topic", t)
	}
	if index > 0 {
		params.Set("index", strconv.FormatUint(index, 10))
	}
	if q != nil && q.Namespace != "" {
		params.Set("namespace", q.Namespace)
	}
	c := e.c.WithContext(ctx)
	// The agent answers its headers after a first poll that does not
	// wait: a read's timeout bounds them; the body has no deadline.
	resp, err := c.retrying(http.MethodGet, eventStreamEndpoint, func() (*http.Response, error) {
		return c.roundTrip(http.MethodGet, eventStreamEndpoint, params, nil, nil, c.timeouts.Read)
	})
	if err != nil {
		return nil, err
	}
	out := make(chan StreamEvent, 64)
	go readEvents(ctx, resp, out)
	return out, nil
}

// readEvents passes the stream's lines on to out until it ends, then
// closes out and the body.
func readEvents(ctx context.Context, resp *http.Response, out chan<- StreamEvent) {
	defer close(out)
	defer resp.Body.Close()
	send := func(item StreamEvent) bool {
		select {
		case out <- item:
			return true
		case <-ctx.Done():
			return false
		}
	}
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadBytes('\n')
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("the agent ended the stream: %w", io.ErrUnexpectedEOF)
			}
			send(StreamEvent{Err: fmt.Errorf("api: event stream: %w", err)})
			return
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 || bytes.Equal(line, []byte("{}")) {
			continue // a heartbeat
		}
		item, last := decodeEventLine(resp, line)
		if !send(item) || last {
			return
		}
	}
}

// eventLine is a stream's line: an event, or the error that ends it.
type eventLine struct {
	structs.Event
	Error *struct {
		Code    string
		Message string
	}
}

// decodeEventLine reads one line; last is true when it ends the stream.
func decodeEventLine(resp *http.Response, line []byte) (item StreamEvent, last bool) {
	var l eventLine
	if err := json.Unmarshal(line, &l); err != nil {
		return StreamEvent{Err: fmt.Errorf("api: event stream: decode line %.200q: %w", line, err)}, true
	}
	if l.Error != nil {
		return StreamEvent{Err: &Error{StatusCode: resp.StatusCode, Code: l.Error.Code, Message: l.Error.Message}}, true
	}
	return StreamEvent{Event: l.Event, Raw: append(json.RawMessage(nil), line...)}, false
}
