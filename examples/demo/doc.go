// Package demo holds the scenario of `tavern demo` (and `make demo`),
// embedded so the demo runs from the binary alone. Read the files: they
// double as an example of driving Tavern from shell scripts.
//
// # Basics
//
// Files holds three files: constitution.md (the drone role's
// instructions), drone.sh (the command each drone runs: the item body on
// stdin, its identity in TAVERN_* variables, a result file, an output
// file in out/) and items.txt (one work item per line). `tavern demo`
// creates a store in a temporary directory, queues the items, gives a lead
// agent two commitments, and runs a pool of drones with a verifier, as
// `tavern pool run` and `tavern verifier` would.
//
// # Caveats
//
//   - drone.sh fails about one run in five on purpose, so that retries
//     and dead letters show up; the demo's outcome therefore varies from
//     run to run.
package demo
