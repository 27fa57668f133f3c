// Package multi holds the several-machines tests of the tavern command
// (issue 20): clones of one store in separate directories, each with its
// own worker processes and `tavern sync --every`, exchanging documents
// through a real git daemon on 127.0.0.1 and arbitrating claims through a
// real etcd (Debian's etcd-server) or through compare-and-swap pushes of
// claim refs. They drive the built binary (TestMain builds it) and check
// the outcome on disk: every item done exactly once, no overlapping
// executions, every clone's listing the same after a final sync.
//
// They live apart from cmd/tavern's own tests so that their minutes
// (dozens of processes per test on a shared machine) count against a test
// binary of their own. `make test` runs small versions; `-tags long`
// (make test-long) drains 1,000 items through etcd and through git.
package multi
