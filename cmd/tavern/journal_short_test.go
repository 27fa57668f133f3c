//go:build !long

package main

// Sizes of the journal tests (journal_truth_test.go) under plain `go
// test`: one case per tool, small enough for make test's budget.
const (
	journalLong   = false // vim's other write modes, git without a watcher
	sedDocs       = 100   // documents sed rewrites and back
	gitDocs       = 20    // per kind of difference (deleted, modified, created)
	gitRounds     = 1     // checkouts back and forth
	rsyncDocs     = 40    // per kind of change
	vimSaves      = 20
	journalGrace  = "500ms" // external_grace of the stores (no engine writes race it)
	journalSettle = "1s"
)
