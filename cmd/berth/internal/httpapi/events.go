package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/berth-csi/berth/structs"
)

// GET /v1/event/stream?topic=T[:key]&index=N&namespace=NS streams change
// events as newline-delimited JSON, one event per line, until the caller
// goes away or the agent shuts down. The handler long-polls Event.Next on
// the servers (through the backend, as every route) and writes each
// answer's events as they come, flushed; an idle stream gets a heartbeat
// line {} every heartbeat interval, so proxies and clients keep it open.
// An error before the first line is an ordinary error answer (400, 403,
// 410 Gone for an index older than the server holds); after it, the
// stream ends with one line {"Error":{"Code":..,"Message":..}}.

const (
	// defaultEventHeartbeat is how long a stream stays silent before a
	// heartbeat line.
	defaultEventHeartbeat = 10 * time.Second
	// eventPollWait bounds each long poll: below a client agent's RPC
	// timeout, and short enough to notice a caller that went away.
	eventPollWait = 5 * time.Second
)

// heartbeatLine is what an idle stream writes.
var heartbeatLine = []byte("{}\n")

// WithEventHeartbeat sets how long an idle event stream waits before it
// writes a heartbeat line (default 10 s); tests shorten it.
func WithEventHeartbeat(d time.Duration) Option {
	return func(h *handler) { h.eventHeartbeat = d }
}

// eventErrorLine is the last line of a stream that ended on an error.
type eventErrorLine struct {
	Error errorBody
}

func (h *handler) eventStream(w http.ResponseWriter, r *http.Request) error {
	req, err := parseEventRequest(r)
	if err != nil {
		return err
	}
	heartbeat := h.eventHeartbeat
	if heartbeat <= 0 {
		heartbeat = defaultEventHeartbeat
	}
	ctx := r.Context()
	// The first poll answers at once: its refusal is the answer's status.
	var reply structs.EventNextResponse
	if err := h.backend.RPC(ctx, "Event.Next", req.at(req.Index, 0), &reply); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-cache")
	// The index the stream starts after: the one asked for, or, from now,
	// the server's latest (not the first answer's last event, which the
	// body has yet to bring).
	start := req.Index
	if start == 0 {
		start = reply.Index
	}
	setIndex(w, start)
	w.WriteHeader(http.StatusOK)
	out := &lineWriter{w: w, rc: http.NewResponseController(w)}
	if len(reply.Events) == 0 {
		out.heartbeat()
	}
	last := time.Now()
	for {
		if len(reply.Events) > 0 {
			out.events(reply.Events)
			last = time.Now()
		} else if time.Since(last) >= heartbeat {
			out.heartbeat()
			last = time.Now()
		}
		if out.err != nil {
			return nil // the caller went away
		}
		index := reply.Index
		reply = structs.EventNextResponse{}
		err := h.backend.RPC(ctx, "Event.Next", req.at(index, min(eventPollWait, heartbeat)), &reply)
		if ctx.Err() != nil {
			return nil // the caller went away, or the agent shuts down
		}
		if err != nil {
			out.fail(err)
			return nil
		}
	}
}

// eventRequest is what the query asks for, to send at each poll.
type eventRequest structs.EventNextRequest

// at returns a fresh request for the events after index, waiting up to
// wait for one.
func (e *eventRequest) at(index uint64, wait time.Duration) *structs.EventNextRequest {
	req := structs.EventNextRequest(*e)
	req.Index, req.MaxWait = index, wait
	return &req
}

// parseEventRequest reads ?topic= (repeated; Topic or Topic:key), ?index=
// and ?namespace=.
func parseEventRequest(r *http.Request) (*eventRequest, error) {
	q := r.URL.Query()
	req := &eventRequest{Topics: map[structs.EventTopic][]string{}}
	for _, s := range q["topic"] {
		topic, key, err := structs.ParseEventTopic(s)
		if err != nil {
			return nil, badRequest("query parameter topic=%q: %v", s, err)
		}
		req.Topics[topic] = append(req.Topics[topic], key)
	}
	if s := q.Get("index"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, badRequest("query parameter index=%q must be a non-negative integer: the raft index to resume after", s)
		}
		req.Index = n
	}
	req.Namespace = q.Get("namespace")
	return req, nil
}

// lineWriter writes NDJSON lines and flushes each batch; err is the first
// write's failure (the caller went away), after which it writes nothing.
type lineWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
}

func (l *lineWriter) events(evs []structs.Event) {
	for i := range evs {
		if l.err != nil {
			return
		}
		line, err := json.Marshal(&evs[i])
		if err != nil {
			l.fail(structs.NewError(structs.CodeInternal, "event stream: encode event %s %s at index %d: %v",
				evs[i].Topic, evs[i].Type, evs[i].Index, err))
			l.err = err
			return
		}
		_, l.err = l.w.Write(append(line, '\n'))
	}
	l.flush()
}

func (l *lineWriter) heartbeat() {
	if l.err == nil {
		_, l.err = l.w.Write(heartbeatLine)
		l.flush()
	}
}

// fail writes the line that ends a stream on err.
func (l *lineWriter) fail(err error) {
	if l.err != nil {
		return
	}
	code := structs.ErrorCodeOf(err)
	if !structs.KnownErrorCode(code) {
		code = structs.CodeInternal
	}
	l.err = json.NewEncoder(l.w).Encode(eventErrorLine{Error: errorBody{Code: code, Message: err.Error()}})
	l.flush()
}

func (l *lineWriter) flush() {
	if l.err == nil {
		l.err = l.rc.Flush()
	}
}
