package demo

import "embed"

// Files are the scenario files: constitution.md, drone.sh, items.txt.
//
//go:embed constitution.md drone.sh items.txt
var Files embed.FS
