# Tavern developer tasks. `make demo` runs the end-to-end demo, `make test`
# runs the test suite (what CI runs), `make check` the static checks.
GO      ?= go
PKGS    := ./...
BIN     := bin/tavern

.PHONY: build test test-long tools check docs fuzz demo demo-workflow clean bench bench-tools bench-readme torture

# urfave_cli_no_docs leaves out urfave/cli's man-page generator (and the
# markdown package it pulls in, whose package init every command paid).
build:
	$(GO) build -tags urfave_cli_no_docs -o $(BIN) ./cmd/tavern

# The packages that run the tavern binary as a user would (cmd/tavern,
# cmd/tavern/multi, examples/soak) share one plain build (no race
# detector, as each built it before: TAVERN_TEST_BINDIR). Each building
# its own linked it three times and, in a cold build cache, compiled
# every dependency without the race detector once per package, at once.
TESTBIN := bin/test

# A binary built with -race sleeps a second when it exits (GORACE's
# atexit_sleep_ms, 1000 by default) so that goroutines still running may
# report a race; races while a test runs are reported as they happen,
# unchanged. The tests run some 30 such binaries and hundreds of race-built
# helper processes (pool drones, mergers, lock holders) that the tests
# wait for: each paid the second.
TESTRACE := GORACE='atexit_sleep_ms=0 $(GORACE)'

# tavern_no_sqlite_baseline leaves out the SQLite baseline benchmark
# (queues/sqlite_bench_test.go): no benchmark runs here, and compiling
# modernc.org/sqlite under -race was ~58 s of CPU in a cold make test.
TESTTAGS := tavern_no_sqlite_baseline

# Each package's deadline. cmd/tavern takes about 4-5 minutes on a quiet
# 2-core machine; at a load average of 15-19 (other suites beside it) it
# took over 9 and every script still running failed at the deadline. A
# slow machine should give a slow run, not a red one; a hung test is
# still stopped, well inside CI's 90 minutes.
TESTTIMEOUT ?= 20m

test: tools
	$(GO) build -o $(TESTBIN)/tavern ./cmd/tavern
	$(TESTRACE) TAVERN_TEST_BINDIR=$(CURDIR)/$(TESTBIN) $(GO) test -race -tags $(TESTTAGS) -timeout $(TESTTIMEOUT) $(PKGS)

# Soak and large-scale tests that do not fit in `make test`.
test-long: tools
	$(GO) build -o $(TESTBIN)/tavern ./cmd/tavern
	$(TESTRACE) TAVERN_TEST_BINDIR=$(CURDIR)/$(TESTBIN) $(GO) test -race -tags long,$(TESTTAGS) -timeout 150m $(PKGS)

# Programs the tests drive as a user would (the journal's hand-edit
# tests: vim, git, rsync; unshare for the inotify limit; the completion
# scripts: zsh, fish; man for the man page; tmux and chromium for tavern
# ui and tavern serve; etcd, Debian's etcd-server, and git daemon for the
# several-machines tests), installed with apt-get where missing. Tests
# skip, saying why, where that is impossible.
TOOLS := vim git rsync unshare zsh fish man tmux chromium etcd
tools:
	@missing=""; for t in $(TOOLS); do command -v $$t >/dev/null 2>&1 || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then \
	  pkgs=$$(echo $$missing | sed 's/unshare/util-linux/; s/\bman\b/man-db/; s/etcd/etcd-server/'); \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$pkgs"; apt-get update -qq && apt-get install -y -qq $$pkgs >/dev/null; \
	  else echo "warning: missing$$missing (tests that need them skip)"; fi; \
	fi

check:
	@echo "gofmt"; out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "$$out"; exit 1; fi
	@echo "go vet"; $(GO) vet $(PKGS)
	@# The benchmark's floor builds (cmd/tavern/exitinit.go, lsfloor.go)
	@# compile only under their tags.
	@echo "go vet (floor tags)"; $(GO) vet -tags urfave_cli_no_docs,tavern_exit_at_init ./cmd/tavern && \
	  $(GO) vet -tags urfave_cli_no_docs,tavern_ls_floor ./cmd/tavern
	@echo "go mod tidy"; cp go.mod /tmp/tavern.go.mod.$$$$; cp go.sum /tmp/tavern.go.sum.$$$$; \
	  $(GO) mod tidy -e 2>/dev/null; if ! git diff --quiet -- go.mod go.sum; then git diff -- go.mod go.sum; \
	  cp /tmp/tavern.go.mod.$$$$ go.mod; cp /tmp/tavern.go.sum.$$$$ go.sum; echo "go.mod/go.sum not tidy"; exit 1; fi
	@echo "layering"; bash .ci/layers
	@echo "docs"; $(GO) test -count=1 -run '^(TestDocs|TestReadmeCommands|TestJSONContract)$$' ./cmd/tavern >/dev/null || \
	  { echo "cmd/tavern/docs or README.md's command list is not current: run make docs"; exit 1; }

# The command reference (cmd/tavern/docs/commands.md), the man page
# (cmd/tavern/docs/tavern.1), the JSON shapes (cmd/tavern/docs/json.md)
# and README.md's command list, generated from the command definitions.
docs:
	$(GO) test -count=1 -run '^(TestDocs|TestJSONContract)$$' ./cmd/tavern -update

# The torture harness (cmd/torture): crash points, queue and pool chaos,
# fault injection (tmpfs; needs root), bad input, tuples (tokens,
# reservations, tuple in under contention: issue 15's stresses, larger); prints a table and fails
# unless nothing was lost, executed twice, torn or left after doctor.
# About 5-10 minutes on 2 cores; TORTURE_SCALE=10 for the 10^5-claim run.
# Not part of `make test`.
torture:
	$(GO) run ./cmd/torture

# Short fuzzing session for every parser (the seed corpus runs in `make test`).
# -fuzz is a regexp that must match exactly one fuzz test, hence the anchors.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 30s ./docstore
	$(GO) test -run '^$$' -fuzz '^FuzzParseWhere$$' -fuzztime 30s ./docstore
	$(GO) test -run '^$$' -fuzz '^FuzzParseFrontFast$$' -fuzztime 30s ./docstore
	$(GO) test -run '^$$' -fuzz '^FuzzEditPatch$$' -fuzztime 30s ./docstore
	$(GO) test -run '^$$' -fuzz '^FuzzAppendJSONString$$' -fuzztime 30s ./docstore
	$(GO) test -run '^$$' -fuzz '^FuzzParsePattern$$' -fuzztime 30s ./queues/tuples
	$(GO) test -run '^$$' -fuzz '^FuzzGlob$$' -fuzztime 30s ./queues/tuples
	$(GO) test -run '^$$' -fuzz '^FuzzTakeHandEdited$$' -fuzztime 30s ./queues
	$(GO) test -run '^$$' -fuzz '^FuzzParseEventLine$$' -fuzztime 30s ./watcher/journal
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeCache$$' -fuzztime 30s ./watcher
	$(GO) test -run '^$$' -fuzz '^FuzzAppendFieldsJSON$$' -fuzztime 30s ./watcher
	$(GO) test -run '^$$' -fuzz '^FuzzEventJSON$$' -fuzztime 30s ./watcher/journal
	$(GO) test -run '^$$' -fuzz '^FuzzParseStamp$$' -fuzztime 30s ./schema
	$(GO) test -run '^$$' -fuzz '^FuzzValidName$$' -fuzztime 30s ./schema
	$(GO) test -run '^$$' -fuzz '^FuzzParsePlan$$' -fuzztime 30s ./queues/plans

demo:
	$(GO) run ./cmd/tavern demo

# From a plan to merged code: worktrees, the merge queue, a human gate,
# the usage ledger and a trace (examples/workflow).
demo-workflow:
	$(GO) run ./cmd/tavern demo workflow

clean:
	rm -rf bin .bench
# --- bench (owned by the bench helper; self-contained, merge as is) --------
# `make bench` runs every benchmark, sequentially (-p 1: packages must
# not share the disk or the 2 CPUs with each other), shows the raw output as
# it runs (tee'd to .bench/last.txt), then prints the cmd/benchreport report:
# ops/s for every benchmark and each Tavern figure as a ratio of its same-run baseline.
# Scratch trees go to .bench/tmp on the work disk (TMPDIR may be tmpfs) and
# are removed once, after the run: deleting trees between repetitions would
# slow the creates that follow (ext4 skips inodes freed in the last 1-60 s,
# up to 360 s if their block is dirty: creating 20k files 2 s after deleting
# 20k ran at a tenth of the fresh rate).
# Every benchmark runs BENCHCOUNT times and the report takes the median: the
# virtual disk's rate drifts 2-3x within minutes, a single run can mislead.
# The repetitions are rounds over the whole suite (-count=1 each), not
# -count=N: a Tavern figure and its baseline (the SQLite queue beside the
# queue benchmarks) then run seconds apart in every round and see the same
# phase of the disk, instead of minutes apart.
# Anything else running (other test suites) skews the disk figures: the load
# average before and after is recorded and shown under the report.
# Override with e.g. `make bench BENCHTIME=3s BENCHCOUNT=5`.
BENCHTIME ?= 1s
BENCHCOUNT ?= 3

# The one-shot baselines run the sqlite3 command (installed when missing).
bench-tools:
	@command -v sqlite3 >/dev/null 2>&1 || { if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  echo "installing: sqlite3"; apt-get update -qq && apt-get install -y -qq sqlite3 >/dev/null; \
	  else echo "warning: sqlite3 missing (the one-shot baselines skip)"; fi; }

bench: bench-tools
	@mkdir -p .bench
	@if [ -f .bench/last.txt ]; then mv .bench/last.txt .bench/prev.txt; fi
	@{ echo "bench-note: load average before: $$(cat /proc/loadavg 2>/dev/null)"; \
	echo 0 > .bench/status; for round in $$(seq $(BENCHCOUNT)); do \
	echo "bench-note: round $$round of $(BENCHCOUNT)"; \
	TAVERN_BENCH_DIR="$(CURDIR)/.bench/tmp" go test -p 1 -run '^$$' -bench . \
		-benchtime=$(BENCHTIME) -count=1 -timeout 15m ./... 2>&1 || echo 1 > .bench/status; done; \
	echo "bench-note: load average after: $$(cat /proc/loadavg 2>/dev/null)"; } \
		| tee .bench/last.txt
	@rm -rf .bench/tmp
	@echo
	@status=$$(cat .bench/status); \
	go run ./cmd/benchreport < .bench/last.txt || status=1; \
	echo "raw output: .bench/last.txt (the run before: .bench/prev.txt)"; \
	exit $$status

# README's performance section is generated from the last two make bench
# runs (.bench/prev.txt, .bench/last.txt): never typed by hand.
bench-readme:
	@runs=""; for f in .bench/prev.txt .bench/last.txt; do [ -f $$f ] && runs="$$runs $$f"; done; \
	go run ./cmd/benchreport -readme README.md $$runs
