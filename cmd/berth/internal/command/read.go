package command

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"github.com/berth-csi/berth/api"
)

// reading is a read-only command once its flags and arguments are parsed
// and its client is made.
type reading struct {
	m       *meta
	c       *api.Client
	pos     []string
	verbose bool
	json    bool
}

// startRead parses -json, -verbose if withVerbose, and up to maxArgs
// positional arguments, and makes the client. On failure it prints and
// returns nil and the exit status.
func (m *meta) startRead(ctx context.Context, args []string, maxArgs int, withVerbose bool) (*reading, int) {
	fs := m.flagSet()
	r := &reading{m: m}
	if withVerbose {
		fs.BoolVar(&r.verbose, "verbose", false, "")
	}
	fs.BoolVar(&r.json, "json", false, "")
	pos, status, ok := m.parse(fs, args, 0, maxArgs)
	if !ok {
		return nil, status
	}
	c, err := m.client(ctx)
	if err != nil {
		return nil, m.fail("%v", err)
	}
	r.c, r.pos = c, pos
	return r, exitOK
}

// readSpec is what a command that reads one endpoint, and takes no
// arguments, supplies to runRead.
type readSpec[T any] struct {
	verbose  bool   // whether the command takes -verbose
	endpoint string // for -json
	doing    string // "list servers", in messages

	get   func(c *api.Client) (T, error)
	print func(m *meta, v T, verbose bool)
}

// runRead prints what the endpoint returns.
func runRead[T any](ctx context.Context, m *meta, args []string, s readSpec[T]) int {
	r, status := m.startRead(ctx, args, 0, s.verbose)
	if r == nil {
		return status
	}
	get := func() (T, error) { return s.get(r.c) }
	return show(r, s.endpoint, nil, s.doing, get, func(v T) { s.print(m, v, r.verbose) })
}

// infoSpec is what a command that shows one object, named by its one
// argument, supplies to runInfo.
type infoSpec[T any] struct {
	noun    string // "policy", in messages
	getPath string // the object's endpoint, before its escaped ID, for -json

	// resolve finds the ID the argument names, e.g. by a unique prefix;
	// nil takes the argument as the ID.
	resolve func(c *api.Client, arg string) (string, error)
	get     func(c *api.Client, id string) (T, error)
	print   func(m *meta, v T)
}

// runInfo prints the object that the command's one argument names.
func runInfo[T any](ctx context.Context, m *meta, args []string, s infoSpec[T]) int {
	r, status := m.startRead(ctx, args, 1, false)
	if r == nil {
		return status
	}
	if len(r.pos) == 0 {
		return m.usageError("this command takes one argument")
	}
	id := r.pos[0]
	if s.resolve != nil {
		var err error
		if id, err = s.resolve(r.c, id); err != nil {
			return m.fail("%s", err)
		}
	}
	get := func() (T, error) { return s.get(r.c, id) }
	return show(r, s.getPath+url.PathEscape(id), nil, "read "+s.noun+" "+strconv.Quote(id), get, func(v T) { s.print(m, v) })
}

// show prints the JSON of endpoint for -json, else what get returns with
// print. doing says what failed, e.g. "list servers".
func show[T any](r *reading, endpoint string, params url.Values, doing string, get func() (T, error), print func(T)) int {
	if r.json {
		raw, err := rawGet(r.c, endpoint, params)
		if err != nil {
			return r.m.fail("%s", apiError(doing, err))
		}
		return r.m.printRaw(raw)
	}
	v, err := get()
	if err != nil {
		return r.m.fail("%s", apiError(doing, err))
	}
	print(v)
	return exitOK
}

// printRaw prints the API's JSON for -json.
func (m *meta) printRaw(raw json.RawMessage) int {
	if err := printJSON(m.stdout, raw); err != nil {
		return m.fail("%v", err)
	}
	return exitOK
}

// printValue prints v as JSON for -json, indented as printRaw prints the
// API's: for what the command got by a call that is not a plain read.
func (m *meta) printValue(v any) int {
	raw, err := json.Marshal(v)
	if err != nil {
		return m.fail("encode the answer as JSON: %v", err)
	}
	return m.printRaw(raw)
}

// rawGet reads an endpoint's JSON as it is, for -json. IDs in endpoint
// must be escaped with url.PathEscape.
func rawGet(c *api.Client, endpoint string, params url.Values) (json.RawMessage, error) {
	var raw json.RawMessage
	_, err := c.Raw().Query(endpoint, params, &raw, nil)
	return raw, err
}

// maxPages bounds how many pages a command follows, in case a plugin
// keeps handing out next tokens.
const maxPages = 10000

// allPages reads pages with fetch, from the one of token start ("" for
// the first) while each hands back a next token, and returns their items
// in order. found, if not nil, ends the reading early once it holds for a
// page's items. A token handed out twice is an error, as the reading
// would never end.
func allPages[T any](start string, fetch func(token string) ([]T, string, error), found func([]T) bool) ([]T, error) {
	var all []T
	seen := map[string]bool{start: start != ""}
	token := start
	for pages := 1; ; pages++ {
		items, next, err := fetch(token)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		hit := found != nil && found(items) // the last page too
		switch {
		case next == "" || hit:
			return all, nil
		case seen[next]:
			return nil, fmt.Errorf("page %d hands back next token %q a second time; the listing would never end", pages, next)
		case pages >= maxPages:
			return nil, fmt.Errorf("stopped after %d pages, which is more than any listing should take", maxPages)
		}
		seen[next] = true
		token = next
	}
}
