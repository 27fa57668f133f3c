# Tavern developer tasks. `make demo` runs the end-to-end demo, `make test`
# runs the test suite (what CI runs), `make check` the static checks.
GO      ?= go
PKGS    := ./...
BIN     := bin/tavern

.PHONY: build test test-long check fuzz demo clean

build:
	$(GO) build -o $(BIN) ./cmd/tavern

test:
	$(GO) test -race -timeout 9m $(PKGS)

# Soak and large-scale tests that do not fit in `make test`.
test-long:
	$(GO) test -race -tags long -timeout 60m $(PKGS)

check:
	@echo "gofmt"; out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "$$out"; exit 1; fi
	@echo "go vet"; $(GO) vet $(PKGS)
	@echo "go mod tidy"; cp go.mod /tmp/tavern.go.mod.$$$$; cp go.sum /tmp/tavern.go.sum.$$$$; \
	  $(GO) mod tidy; if ! git diff --quiet -- go.mod go.sum; then git diff -- go.mod go.sum; \
	  cp /tmp/tavern.go.mod.$$$$ go.mod; cp /tmp/tavern.go.sum.$$$$ go.sum; echo "go.mod/go.sum not tidy"; exit 1; fi
	@echo "layering"; bash .ci/layers

# Short fuzzing session for every parser (the seed corpus runs in `make test`).
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./docstore
	$(GO) test -run '^$$' -fuzz FuzzParseWhere -fuzztime 30s ./docstore
	$(GO) test -run '^$$' -fuzz FuzzParsePattern -fuzztime 30s ./queues
	$(GO) test -run '^$$' -fuzz FuzzGlob -fuzztime 30s ./queues

demo:
	$(GO) run ./cmd/tavern demo

clean:
	rm -rf bin .bench
