// Package telemetrytest reads berth's metrics in tests: a counter's value,
// a histogram's sample count, a registry's scrape, and promtool's lint of
// a scrape (skipping, saying why, where promtool is not installed).
//
// It imports the prometheus client and its data model, nothing of
// berth's. Its helpers read process-global metrics: a test that asserts
// on them uses label values no other test uses, or compares before and
// after in a test that does not run in parallel.
package telemetrytest
