// Command importcheck enforces berth's import direction (DESIGN.md): each
// package may import only the berth packages its layer allows, and only
// client/csi (and the berth-hostpath plugin) may import the CSI spec and
// gRPC. It reads `go list -json ./...` on stdin and exits 1 naming every
// forbidden edge.
package main
