// Package dockertest is the docker driver tests' harness: a client of the
// local engine that skips the test (saying why) where there is none or
// the test is not root, static Go binaries built once per test run, and
// images built from them through the engine's API (FROM scratch, the
// binary as entrypoint), removed when the test ends.
//
// Imports: the Docker client and the standard library; no berth package.
// Tests only.
//
// Concurrency: safe for parallel tests; StaticBinary builds each package
// once per process.
package dockertest
