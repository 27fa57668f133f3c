//go:build long

package main

// cliIncrements per client in TestLostUpdateCLI under `-tags long`: the
// full 8 × 200 of issue 2.
const cliIncrements = 200
