package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"github.com/ugorji/go/codec"

	"github.com/berth-csi/berth/structs"
)

// streamChunk is how much of a streamed list is buffered before it is
// written out.
const streamChunk = 64 << 10

// wantsMsgpack reports whether the caller asked for msgpack answers
// (Accept: application/msgpack, as the Go api client does).
func wantsMsgpack(r *http.Request) bool {
	for _, a := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(a, ",") {
			if mt, _, _ := strings.Cut(strings.TrimSpace(part), ";"); mt == structs.MediaTypeMsgpack {
				return true
			}
		}
	}
	return false
}

// msgpackEncoders are reused: an encoder's buffers cost more to make than
// a small answer costs to encode.
var msgpackEncoders = sync.Pool{New: func() any { return codec.NewEncoder(io.Discard, structs.HTTPMsgpackHandle) }}

// writeMsgpack writes v with status 200 in structs.HTTPMsgpackHandle,
// which shows what the JSON would and nothing more. It streams as it
// encodes; a failure before any byte reached the caller is a clean 500,
// after that the connection is cut, as writeJSONList does.
func writeMsgpack(w http.ResponseWriter, r *http.Request, v any) error {
	sent := &countingWriter{w: w}
	bw := bufio.NewWriterSize(sent, streamChunk)
	w.Header().Set("Content-Type", structs.MediaTypeMsgpack)
	enc := msgpackEncoders.Get().(*codec.Encoder)
	enc.Reset(bw)
	err := enc.Encode(v)
	enc.Reset(io.Discard) // holds no answer's writer while pooled
	msgpackEncoders.Put(enc)
	if err != nil {
		if sent.n == 0 {
			w.Header().Del("Content-Type")
			return fmt.Errorf("encode answer to %s %s: %w", r.Method, r.URL.Path, err)
		}
		panic(http.ErrAbortHandler)
	}
	_ = bw.Flush()
	return nil
}

// writeJSONList writes a list (list is a slice) as one JSON array,
// element by element: the answer is never held whole, so a list of 50,000
// volumes costs the agent one element's encoding at a time, and the
// caller's first bytes leave before the last element is encoded. With
// pretty, it is indented as json.MarshalIndent would. An element that
// fails to encode before any byte reached the caller is a clean 500;
// after that, the connection is cut so that the caller sees a broken
// answer, never a short list that looks whole.
func writeJSONList(w http.ResponseWriter, r *http.Request, list reflect.Value, pretty bool) error {
	var elem bytes.Buffer
	enc := json.NewEncoder(&elem)
	open, sep, end := "[", ",", "]\n"
	if pretty {
		enc.SetIndent("    ", "    ")
		open, sep, end = "[\n    ", ",\n    ", "\n]\n"
	}
	sent := &countingWriter{w: w}
	bw := bufio.NewWriterSize(sent, streamChunk)
	w.Header().Set("Content-Type", "application/json")
	for i := range list.Len() {
		elem.Reset()
		if i == 0 {
			elem.WriteString(open)
		} else {
			elem.WriteString(sep)
		}
		if err := enc.Encode(list.Index(i).Interface()); err != nil {
			if sent.n == 0 { // all of it is still in bw: drop it
				return fmt.Errorf("encode answer to %s %s: element %d: %w", r.Method, r.URL.Path, i, err)
			}
			panic(http.ErrAbortHandler)
		}
		elem.Truncate(elem.Len() - 1) // Encode's newline
		if _, err := bw.Write(elem.Bytes()); err != nil {
			return nil // the caller went away
		}
	}
	if list.Len() == 0 {
		_, _ = bw.WriteString("[]\n")
	} else {
		_, _ = bw.WriteString(end)
	}
	_ = bw.Flush()
	return nil
}

// countingWriter counts the bytes that reached w.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
