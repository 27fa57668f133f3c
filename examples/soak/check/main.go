// Command check verifies a finished soak scenario (examples/soak/soak.sh):
//
//	go run ./examples/soak/check DIR
//
// It prints the report and exits 1 if anything was not made under a live
// reservation and a held merge slot, or an item is not done.
package main

import (
	"fmt"
	"os"

	"github.com/tavernhq/tavern/examples/soak"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: check DIR")
		os.Exit(2)
	}
	r, err := soak.Check(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "check:", err)
		os.Exit(1)
	}
	fmt.Print(r)
	if len(r.Violations) > 0 {
		os.Exit(1)
	}
}
