package command

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/berth-csi/berth/api"
)

// resolve picks the one ID that is id or starts with it, from the IDs a
// list by prefix returned. kind names the object ("volume"), listCmd the
// command that lists them.
func resolve(kind, listCmd, id string, ids []string) (string, error) {
	var matches []string
	for _, c := range ids {
		if c == id {
			return c, nil
		}
		if strings.HasPrefix(c, id) {
			matches = append(matches, c)
		}
	}
	switch len(matches) {
	case 0:
		return "", fmt.Errorf("%s %q not found; run %q to list them", kind, id, listCmd)
	case 1:
		return matches[0], nil
	}
	sort.Strings(matches)
	const show = 10
	list := matches
	more := ""
	if len(list) > show {
		list, more = list[:show], fmt.Sprintf(" and %d more", len(matches)-show)
	}
	return "", fmt.Errorf("prefix %q matches %d %ss: %s%s; give more of the ID",
		id, len(matches), kind, strings.Join(list, ", "), more)
}

// apiError turns a client error into the message to print: the server's
// message as it is (it names the object and what to do), anything else
// with what was being done.
func apiError(doing string, err error) string {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Message
	}
	var ue *api.UnreachableError
	if errors.As(err, &ue) {
		return fmt.Sprintf("%s: %v Set -address or %s to an agent's HTTP address.", doing, err, api.AddressEnv)
	}
	return fmt.Sprintf("%s: %v", doing, err)
}
