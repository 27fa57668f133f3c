// Package demo holds the scenario of `tavern demo` (and `make demo`): a
// role constitution, a drone script and the work items, embedded so the
// demo runs from the binary alone. Read the files: they double as an
// example of driving Tavern from shell scripts.
package demo

import "embed"

// Files are the scenario files: constitution.md, drone.sh, items.txt.
//
//go:embed constitution.md drone.sh items.txt
var Files embed.FS
