package command

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/berth-csi/berth/api"
)

// statusSpec is what a `<noun> status` command supplies to runStatus: L is
// the list item, O the object.
type statusSpec[L, O any] struct {
	noun      string     // "node", in messages
	listCmd   string     // "berth node status", named when an ID is not found
	listPath  string     // "/v1/nodes", for -json
	listQuery url.Values // listPath's parameters
	getPath   string     // "/v1/node/", the escaped ID follows; for -json

	list      func(c *api.Client, q *api.QueryOptions) ([]L, *api.QueryMeta, error)
	id        func(L) string
	get       func(c *api.Client, id string) (O, *api.QueryMeta, error)
	printList func(m *meta, items []L, verbose bool)
	printOne  func(m *meta, obj O, verbose bool)

	// verboseList and verboseOne, when set, print more after the list or
	// the object under -verbose (never with -json), reading what they
	// need with c.
	verboseList func(m *meta, c *api.Client, items []L)
	verboseOne  func(m *meta, c *api.Client, obj O)
}

// runStatus lists the objects, or shows the one given by a unique prefix
// of its ID.
func runStatus[L, O any](ctx context.Context, m *meta, args []string, s statusSpec[L, O]) int {
	r, status := m.startRead(ctx, args, 1, true)
	if r == nil {
		return status
	}
	if len(r.pos) == 0 {
		list := func() ([]L, error) {
			items, _, err := s.list(r.c, nil)
			return items, err
		}
		return show(r, s.listPath, s.listQuery, "list "+s.noun+"s", list,
			func(items []L) {
				s.printList(m, items, r.verbose)
				if r.verbose && s.verboseList != nil {
					s.verboseList(m, r.c, items)
				}
			})
	}
	id, err := s.resolve(r.c, r.pos[0])
	if err != nil {
		return m.fail("%s", err)
	}
	get := func() (O, error) {
		obj, _, err := s.get(r.c, id)
		return obj, err
	}
	return show(r, s.getPath+url.PathEscape(id), nil, "read "+s.noun+" "+strconv.Quote(id), get,
		func(obj O) {
			s.printOne(m, obj, r.verbose)
			if r.verbose && s.verboseOne != nil {
				s.verboseOne(m, r.c, obj)
			}
		})
}

// connect opens the command's client and resolves given, an ID or the
// unique prefix of one, to the object's full ID. On failure it has printed
// why, and c is nil: return code.
func (s statusSpec[L, O]) connect(ctx context.Context, m *meta, given string) (c *api.Client, id string, code int) {
	c, err := m.client(ctx)
	if err != nil {
		return nil, "", m.fail("%v", err)
	}
	if id, err = s.resolve(c, given); err != nil {
		return nil, "", m.fail("%s", err)
	}
	return c, id, exitOK
}

// resolve finds the object whose ID is id or starts with it.
func (s statusSpec[L, O]) resolve(c *api.Client, id string) (string, error) {
	item, err := s.find(c, id)
	if err != nil {
		return "", err
	}
	return s.id(item), nil
}

// find returns the list item of the object whose ID is id or starts with
// it.
func (s statusSpec[L, O]) find(c *api.Client, id string) (L, error) {
	var zero L
	items, _, err := s.list(c, &api.QueryOptions{Prefix: id})
	if err != nil {
		return zero, errors.New(apiError("look up "+s.noun+" "+strconv.Quote(id), err))
	}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = s.id(it)
	}
	full, err := resolve(s.noun, s.listCmd, id, ids)
	if err != nil {
		return zero, err
	}
	for _, it := range items {
		if s.id(it) == full {
			return it, nil
		}
	}
	return zero, fmt.Errorf("%s %q not found; run %q to list them", s.noun, id, s.listCmd)
}
