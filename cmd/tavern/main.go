package main

import (
	"context"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
)

func main() {
	oneShotMemory()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile := startProfile()
	heapProfileOnSignal()
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

// heapProfileOnSignal writes a heap profile to $TAVERN_MEMPROFILE, if
// set, whenever the process gets SIGUSR1: what a long-running command's
// projection keeps in memory (a developer aid like TAVERN_CPUPROFILE).
func heapProfileOnSignal() {
	path := os.Getenv("TAVERN_MEMPROFILE")
	if path == "" {
		return
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	go func() {
		for range ch {
			f, err := os.Create(path)
			if err != nil {
				continue
			}
			runtime.GC()
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
	}()
}
