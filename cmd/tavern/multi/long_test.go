//go:build long

package multi

// Sizes of the several-machines runs under `-tags long` (make
// test-long): issue 20's 1,000 items through etcd and through git.
const (
	multiItems     = 1000
	multiItemsGit  = 1000
	multiItemsKill = 300
)
