// Package command is berth's CLI: `berth <noun> <verb> [flags] args`,
// Nomad-style. Each command parses its flags with the standard flag
// package (single dash; flags may also follow the positional arguments),
// talks to the HTTP API through the api package, and prints aligned tables
// for people or, with -json, the API's JSON unchanged.
//
// Exit status: 0 ok, 1 error (the message on stderr names the object and
// what to do), 2 usage error (unknown command or flag, wrong argument
// count: the usage follows).
//
// Commands write only to the App's Stdout and Stderr, so tests run them
// in-process against an httptest server. `berth agent` is handed to the
// App's Agent function: this package must not import the agent, server,
// state or fsm packages; it reaches a cluster only over HTTP.
//
// Concurrency: an App runs one command per Run call; Run may be called
// concurrently on separate Apps.
package command
