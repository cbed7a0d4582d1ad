package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/berth-csi/berth/structs"
)

// headerToken carries the caller's ACL secret ID. No header, or an empty
// one, is the anonymous caller.
const headerToken = "X-Berth-Token"

// tokenKey is the request context key of the caller's token.
type tokenKey struct{}

// withToken returns r with the X-Berth-Token header's value in its
// context, where authBackend finds it.
func withToken(r *http.Request) *http.Request {
	token := strings.TrimSpace(r.Header.Get(headerToken))
	return r.WithContext(context.WithValue(r.Context(), tokenKey{}, token))
}

// tokenFrom returns the token withToken stored in ctx; "" when none.
func tokenFrom(ctx context.Context) string {
	token, _ := ctx.Value(tokenKey{}).(string)
	return token
}

// authCarrier is a request that carries the caller's token: every request
// that embeds structs.QueryOptions or structs.WriteRequest.
type authCarrier interface {
	SetAuthToken(string)
}

// authBackend is the one place where the caller's token joins an RPC: it
// sets every request's AuthToken from the context, so no route can forget
// it, and a token sent in a request body is replaced (with "" when there
// is no header). The servers decide what the token may do; a request
// type that cannot carry a token is refused here rather than sent as
// anonymous.
type authBackend struct {
	next Backend
}

var _ Backend = authBackend{}

func (b authBackend) RPC(ctx context.Context, method string, args, reply any) error {
	req, ok := args.(authCarrier)
	if !ok {
		return structs.NewError(structs.CodeInternal,
			"rpc %s: request %T carries no ACL token; embed structs.QueryOptions or structs.WriteRequest in it", method, args)
	}
	req.SetAuthToken(tokenFrom(ctx))
	return b.next.RPC(ctx, method, args, reply)
}
