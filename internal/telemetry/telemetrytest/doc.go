// Package telemetrytest reads berth's metrics in tests: a counter's value,
// a histogram's sample count, a registry's scrape, and the lint of a
// scrape that `promtool check metrics` makes (promlint in this process
// always, promtool too where it is installed: it never skips).
//
// It imports the prometheus client, its data model and its text parser
// (prometheus/common's expfmt), nothing of berth's. Its helpers read process-global metrics: a test that asserts
// on them uses label values no other test uses, or compares before and
// after in a test that does not run in parallel.
package telemetrytest
