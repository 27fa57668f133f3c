//go:build tavern_exit_at_init

package main

import "os"

// Built only by `make bench` (BenchmarkOneShotBaseline/tavern-init): the
// process ends once package main is initialised, after every package it
// links, before any command runs. What it takes is the floor of every
// one-shot command of this binary: exec, the runtime's start and the
// packages' initialisation.
func init() { os.Exit(0) }
