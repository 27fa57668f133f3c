//go:build !long

package multi

// Sizes of the several-machines runs in `make test`; `-tags long` runs
// the 1,000 items (multi_long_test.go).
const (
	multiItems     = 30
	multiItemsGit  = 12
	multiItemsKill = 16
)
