//go:build !long

package main

// cliIncrements per client in TestLostUpdateCLI under plain `go test`
// (8 clients: 64 contended increments, a few hundred refused --if-rev
// sets; the long run makes 1,600). The --if-rev check runs in the
// library under the lock Update takes, whose cross-process race
// TestLostUpdateProcesses (docstore) drives at 8 × 200; here the command
// line's path is what is shown (show's rev, set --if-rev, exit 4 and the
// retry), which needs contention, not volume: 15 per client took about
// 1,100 process starts (17 CPU-s of make test).
const cliIncrements = 8
