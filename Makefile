# --- bench (owned by the bench helper; self-contained, merge as is) --------
# `make bench` runs every benchmark, sequentially (-p 1: packages must
# not share the disk or the 2 CPUs with each other), shows the raw output as
# it runs (tee'd to .bench/last.txt), then prints the cmd/benchreport report:
# ops/s for every benchmark and each Tavern figure as a ratio of its same-run baseline.
# Scratch trees go to .bench/tmp on the work disk (TMPDIR may be tmpfs) and
# are removed once, after the run: deleting trees between repetitions would
# slow the creates that follow (see research/physical-limits.md, inode reuse).
# Every benchmark runs BENCHCOUNT times and the report takes the median: the
# virtual disk's rate drifts 2-3x within minutes, a single run can mislead.
# Anything else running (other test suites) skews the disk figures: the load
# average before and after is recorded and shown under the report.
# Override with e.g. `make bench BENCHTIME=3s BENCHCOUNT=5`.
BENCHTIME ?= 1s
BENCHCOUNT ?= 3

.PHONY: bench
bench:
	@mkdir -p .bench
	@{ echo "bench-note: load average before: $$(cat /proc/loadavg 2>/dev/null)"; \
	TAVERN_BENCH_DIR="$(CURDIR)/.bench/tmp" go test -p 1 -run '^$$' -bench . \
		-benchtime=$(BENCHTIME) -count=$(BENCHCOUNT) -timeout 15m ./... 2>&1; echo $$? > .bench/status; \
	echo "bench-note: load average after: $$(cat /proc/loadavg 2>/dev/null)"; } \
		| tee .bench/last.txt
	@rm -rf .bench/tmp
	@echo
	@status=$$(cat .bench/status); \
	go run ./cmd/benchreport < .bench/last.txt || status=1; \
	echo "raw output: .bench/last.txt"; \
	exit $$status
