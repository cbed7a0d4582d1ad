// Package backoff is berth's one retry policy: a bounded exponential
// backoff with jitter, and a loop that retries a call under a context.
//
// The loop is github.com/cenkalti/backoff/v5's Retry. This package adds
// what berth needs on top of it:
//   - Delay(attempt) is a pure function of the attempt count, for schedules
//     that are persisted (the volume watcher keeps a claim's attempts in
//     raft, so its next delay must follow from the count, not from a
//     stateful backoff object);
//   - Retry returns the call's last error when the context ends, so a
//     caller reports what the plugin or server said, not "context canceled";
//   - jitter only shortens a delay, so Max is a true ceiling.
//
// Leaf package: it imports nothing of berth's.
package backoff
