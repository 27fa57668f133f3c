//go:build long

package main

// Sizes of the tuple-space stresses under `-tags long`: issue 15's run
// (4 workers × 25 cycles) doubled.
const (
	stressWorkers = 8
	stressCycles  = 50
)
