# zspool — the two commands a fresh machine needs are `make demo` and
# `make test`; everything else here is a convenience.
GO ?= go

.PHONY: test demo build fuzz bench vet
test: interop/node_modules/.installed
	$(GO) vet ./...
	ZSPOOL_REQUIRE_INTEROP=1 $(GO) test -race -count=1 ./...

# The independent reader (zarrita.js) the interop tests read our output with.
interop/node_modules/.installed: interop/package.json interop/package-lock.json
	npm ci --prefix interop --no-audit --no-fund
	touch $@

demo:
	$(GO) run ./cmd/zspool demo

build:
	$(GO) build -o zspool ./cmd/zspool

vet:
	$(GO) vet ./...

fuzz:
	$(GO) test ./config -run '^$$' -fuzz FuzzParseManifest -fuzztime 60s

bench:
	bench/cpu-vs-zstd.sh
