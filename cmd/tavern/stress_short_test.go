//go:build !long

package main

// Sizes of the tuple-space stresses (stress_test.go) under plain
// `go test`: small enough for `make test` on 2 cores. `-tags long` (make
// test-long) runs the larger version in stress_long_test.go.
const (
	stressWorkers = 4 // worker processes per primitive
	stressCycles  = 8 // acquire/release (reserve/unreserve, in) per worker
)
