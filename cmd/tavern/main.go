package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile := startProfile()
	err := run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	stopProfile()
	stop()
	os.Exit(reportError(os.Stderr, os.Args, err))
}

// startProfile writes a CPU profile to $TAVERN_CPUPROFILE if set: a
// developer aid for one-shot commands (`tavern ls` on a big store).
func startProfile() func() {
	path := os.Getenv("TAVERN_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}
