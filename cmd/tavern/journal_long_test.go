//go:build long

package main

// Sizes of the journal tests under `-tags long` (make test-long): the
// full cases of issue 14.
const (
	journalLong   = true
	sedDocs       = 500
	gitDocs       = 100 // 300 documents differ
	gitRounds     = 3
	rsyncDocs     = 100
	vimSaves      = 20
	journalGrace  = "500ms"
	journalSettle = "1s"
)
