package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// Usage:
//
//	go test -bench . ./... | benchreport          the report of one run
//	benchreport -readme README.md RUN.txt...      README's generated section
func main() {
	readme := flag.String("readme", "", "rewrite the generated section of this README from the runs named as arguments")
	flag.Parse()
	if *readme != "" {
		if err := writeReadme(*readme, flag.Args()); err != nil {
			fmt.Fprintln(os.Stderr, "benchreport:", err)
			os.Exit(1)
		}
		return
	}
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

func writeReadme(path string, files []string) error {
	if len(files) == 0 {
		return fmt.Errorf("-readme needs the raw output of at least one make bench run")
	}
	var runs []*results
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		r, err := parse(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if len(r.Failures) > 0 {
			return fmt.Errorf("%s: the run reports failures: %s", f, r.Failures[0])
		}
		runs = append(runs, r)
		names = append(names, filepath.Base(f))
	}
	var section bytes.Buffer
	renderReadme(&section, runs, names, pairs)
	return updateReadme(path, section.Bytes())
}
