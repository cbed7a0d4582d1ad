package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
)

// streamChunk is how much of a streamed list is buffered before it is
// written out.
const streamChunk = 64 << 10

// writeJSONList writes a list (list is a slice) as one JSON array,
// element by element: the answer is never held whole, so a list of 50,000
// volumes costs the agent one element's encoding at a time, and the
// caller's first bytes leave before the last element is encoded. An
// element that fails to encode before anything was written is a clean
// 500; after that, the connection is cut so that the caller sees a broken
// answer, never a short list that looks whole.
func writeJSONList(w http.ResponseWriter, r *http.Request, list reflect.Value) error {
	var elem bytes.Buffer
	enc := json.NewEncoder(&elem)
	bw := bufio.NewWriterSize(w, streamChunk)
	started := false
	for i := range list.Len() {
		elem.Reset()
		if i == 0 {
			elem.WriteByte('[')
		} else {
			elem.WriteByte(',')
		}
		if err := enc.Encode(list.Index(i).Interface()); err != nil {
			if !started {
				return fmt.Errorf("encode answer to %s %s: element %d: %w", r.Method, r.URL.Path, i, err)
			}
			panic(http.ErrAbortHandler)
		}
		elem.Truncate(elem.Len() - 1) // Encode's newline
		if !started {
			w.Header().Set("Content-Type", "application/json")
			started = true
		}
		if _, err := bw.Write(elem.Bytes()); err != nil {
			return nil // the caller went away
		}
	}
	if !started {
		w.Header().Set("Content-Type", "application/json")
		_, _ = bw.WriteString("[")
	}
	_, _ = bw.WriteString("]\n")
	_ = bw.Flush()
	return nil
}
