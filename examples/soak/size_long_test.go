//go:build long

package soak

// soakSize under -tags long (make test-long): the scenario's default size
// and more.
var soakSize = struct{ drones, items, kills int }{4, 80, 30}
