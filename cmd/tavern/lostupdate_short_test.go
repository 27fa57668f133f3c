//go:build !long

package main

// cliIncrements per client in TestLostUpdateCLI under plain `go test`.
const cliIncrements = 25
