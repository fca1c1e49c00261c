# zspool — the two commands a fresh machine needs are `make demo` and
# `make test`; everything else here is a convenience.
GO ?= go

.PHONY: test demo build fuzz bench vet
test: interop/node_modules/.installed s3-servers
	$(GO) vet ./...
	ZSPOOL_REQUIRE_INTEROP=1 ZSPOOL_REQUIRE_S3=1 ZSPOOL_REQUIRE_SYSTEMD=1 AWS_EC2_METADATA_DISABLED=true $(GO) test -race -count=1 -timeout 30m ./...

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

# Real S3 servers (MinIO, versitygw) for the S3 tests, built once from the
# module proxy and cached outside the repo (ZSPOOL_TOOLS, default
# ~/.cache/zspool).
.PHONY: s3-servers
s3-servers:
	.ci/install-s3-servers.sh
