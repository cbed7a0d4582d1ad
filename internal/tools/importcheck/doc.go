// Command importcheck enforces berth's import direction
// (docs/architecture.md, "Packages"). The module has two folders that are
// layers of their own: internal/ holds leaf libraries, which may import
// only other internal/ packages, and harness/ holds the harnesses that run
// berth whole (agentproc, chaos, loadtest, fleet, integration), which may import
// anything and which no package outside harness/ may import. Beyond that,
// each package may import only the berth packages its row of the table
// allows, and only client/csi (and the berth-hostpath plugin) may import
// the CSI spec and gRPC. It reads `go list -json ./...` on stdin and exits
// 1 naming every forbidden edge.
package main
