// Command tavern is the command-line interface to a Tavern store: a
// .tavern/ directory of markdown documents that many agents coordinate
// through. Run `tavern --help` for the commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(reportError(os.Stderr, os.Args, err))
}
