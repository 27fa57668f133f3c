//go:build !long

package main

// Sizes of the several-machines runs in `make test`; `-tags long` runs
// the 1,000 items (multi_long_test.go).
const (
	multiItems     = 36
	multiItemsGit  = 16
	multiItemsKill = 24
)
