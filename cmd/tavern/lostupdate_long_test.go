//go:build long

package main

// cliIncrements per client in TestLostUpdateCLI under `-tags long`: the
// full 8 clients × 200 increments of the lost-update contract.
const cliIncrements = 200
