// Command berth is the berth binary: `berth agent ...` runs an agent, and
// every other command is the CLI, which talks to an agent's HTTP API.
package main
