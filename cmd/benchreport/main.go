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
