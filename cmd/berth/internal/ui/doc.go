// Package ui serves berth's web UI at /ui/ on the agent's HTTP address:
// plain HTML, CSS and JavaScript modules written for it, embedded in the
// binary with go:embed (static/), with no build step and nothing fetched
// from the network (the Content-Security-Policy allows this origin only).
// The pages are hash routes (#/volumes/ID) rendered in the browser from
// the same HTTP API the CLI reads (/v1/...), kept live with blocking
// queries (?index=N&wait=30s); the ACL token the user gives is kept in
// the browser's localStorage and sent as X-Berth-Token.
//
// Mount puts the UI in front of the API handler: GET / redirects to
// /ui/, /ui/ and below serve the embedded files, and any path that is not
// one of them serves index.html (the client-side routes); everything else
// goes to the API unchanged. Only the embedded files are ever read.
//
// Imports: the standard library only; the API is reached by the browser,
// never from here.
//
// Concurrency: the handler holds immutable data built once by Handler
// (Mount calls it once) and is safe for concurrent use.
package ui
