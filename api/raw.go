package api

import (
	"net/http"
	"net/url"
)

// Raw reaches any endpoint with the client's address, context and error
// handling, in JSON (the typed calls ask for msgpack). The CLI's -json
// output reads through it, decoding into a *json.RawMessage so that the
// API's JSON is printed unchanged.
type Raw struct{ c *Client }

// Raw returns the raw endpoint access.
func (c *Client) Raw() *Raw { return &Raw{c} }

// Query GETs endpoint (a path such as "/v1/volumes", with params as its
// query string) and decodes the answer into out.
func (r *Raw) Query(endpoint string, params url.Values, out any, q *QueryOptions) (*QueryMeta, error) {
	return r.c.queryWithHeader(endpoint, params, jsonOnly(), out, q)
}

// Write sends method to endpoint with in as its JSON body (nil for none)
// and decodes the answer into out (nil to ignore it).
func (r *Raw) Write(method, endpoint string, params url.Values, in, out any) (*WriteMeta, error) {
	return r.c.writeWithHeader(method, endpoint, params, jsonOnly(), in, out)
}

// jsonOnly asks for the answer in JSON.
func jsonOnly() http.Header { return http.Header{"Accept": {"application/json"}} }
