// Package statetest builds state stores and fixtures for tests, here and in
// the packages that read state (fsm, server). It has no assertions: it
// imports testing only to fail a test whose store cannot be built.
package statetest
