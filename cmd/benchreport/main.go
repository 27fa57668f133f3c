// Command benchreport reads `go test -bench` output on stdin and prints
// every benchmark's ops/s, then each Tavern figure next to its same-run
// baseline as a ratio (the pairing table is in pairs.go). Benchmarks missing
// from the input show as "-". It exits 1 if the input reports a failure, after
// printing the report, so `make bench` fails visibly.
//
//	go test -run '^$' -bench . ./... | go run ./cmd/benchreport
package main

import (
	"fmt"
	"os"
)

func main() {
	res, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
	if err := render(os.Stdout, res, pairs); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
	if len(res.Failures) > 0 {
		os.Exit(1)
	}
}
