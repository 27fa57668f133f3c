package workflow

import "embed"

// Files are the scenario files: plan.md, drone.sh, check.sh.
//
//go:embed plan.md drone.sh check.sh
var Files embed.FS
