// Command benchreport reads `go test -bench` output on stdin and prints
// every benchmark's ops/s, then each Tavern figure next to its same-run
// baseline as a ratio. `make bench` pipes the suite into it.
//
//	go test -run '^$' -bench . ./... | go run ./cmd/benchreport
//
// # Basics
//
// The pairing table (pairs.go) names each Tavern benchmark, the metric
// compared ("ops/s", "files/s", "p50-µs", "cpu-µs/op"), its baseline
// benchmark and, where the project has one, the goal (a minimum or maximum
// ratio). A benchmark that ran several times (rounds, -count) is reported
// as the median of its runs. Benchmarks missing from the input show as
// "-".
//
// # Caveats
//
//   - It exits 1 if the input reports a failure, after printing the
//     report, so `make bench` fails visibly.
//   - Ratios are only as good as the pairing: a figure and its baseline
//     should run seconds apart on the same disk, which is why `make bench`
//     runs the suite in rounds rather than with -count.
//   - Benchmark names and metric units are part of the pairing table:
//     renaming a benchmark or a metric without updating pairs.go turns its
//     row into "-".
package main
