//go:build long

package multi

// Sizes of the several-machines runs under `-tags long` (make
// test-long): issue 20's 1,000 items through etcd and through git, also
// when a machine dies mid-run. About an hour in all on 2 loaded CPUs,
// most of it the git runs (a claim there is a fetch and a push).
const (
	multiItems     = 1000
	multiItemsGit  = 1000
	multiItemsKill = 1000
)
