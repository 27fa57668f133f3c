//go:build !long

package soak

// soakSize under plain `go test` (make test): a few kills over a short run.
var soakSize = struct{ drones, items, kills int }{3, 10, 3}
