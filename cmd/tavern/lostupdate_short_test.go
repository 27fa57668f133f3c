//go:build !long

package main

// cliIncrements per client in TestLostUpdateCLI under plain `go test`
// (8 clients: 120 contended increments; the long run makes 1,600).
const cliIncrements = 15
