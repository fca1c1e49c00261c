# zspool — the two commands a fresh machine needs are `make demo` and
# `make test`; everything else here is a convenience.
GO ?= go

# Tools built from the module proxy are cached outside the repo, keyed by
# version, like the S3 servers (see .ci/install-s3-servers.sh).
TOOLS ?= $(or $(ZSPOOL_TOOLS),$(HOME)/.cache/zspool)
GOTESTSUM_VERSION := v1.13.0
GOTESTSUM := $(TOOLS)/gotestsum-$(GOTESTSUM_VERSION)/gotestsum

.PHONY: test demo build fuzz bench vet modules
test: modules interop/node_modules/.installed s3-servers $(GOTESTSUM)
	@echo "== go vet (builds every package: a few minutes the first time)"
	$(GO) vet ./...
	@echo "== tests with -race: about 8 minutes on 2 idle cores (more on busy ones); each test is listed as it ends"
	ZSPOOL_REQUIRE_INTEROP=1 ZSPOOL_REQUIRE_S3=1 ZSPOOL_REQUIRE_SYSTEMD=1 AWS_EC2_METADATA_DISABLED=true \
	  $(GOTESTSUM) --format testname --format-hide-empty-pkg -- -race -count=1 -timeout 30m ./...

# Downloads the modules once, quietly, instead of a screenful of
# "go: downloading" lines in the middle of the build.
modules:
	@echo "== Go modules (downloaded once into the module cache)"
	@$(GO) mod download

# gotestsum reports each test as it ends, so a 25-minute run shows progress.
$(GOTESTSUM):
	@echo "== building gotestsum $(GOTESTSUM_VERSION) into $(dir $@)"
	@mkdir -p $(dir $@)
	cd $(dir $@) && GOBIN=$(abspath $(dir $@)) $(GO) install gotest.tools/gotestsum@$(GOTESTSUM_VERSION)

# The independent reader (zarrita.js) the interop tests read our output with.
interop/node_modules/.installed: interop/package.json interop/package-lock.json
	npm ci --prefix interop --no-audit --no-fund
	touch $@

demo: modules
	@echo "== building zspool (a minute or two the first time, then cached)"
	@mkdir -p .cache
	$(GO) build -buildvcs=auto -o .cache/zspool ./cmd/zspool
	.cache/zspool demo

build:
	$(GO) build -buildvcs=auto -o zspool ./cmd/zspool

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

# The GPU engine: CUDA sources in kernels/, compiled into the committed and
# embedded kernels/zspool.fatbin (compute_80 PTX for any newer GPU, sm_90
# machine code for Hopper). SOURCES.sha256 ties the fatbin to the sources
# it was built from; kernels-check (CI) fails when they drift apart, and
# runs the kernels' index math on the CPU against the reference.
NVCC ?= nvcc
KERNEL_SOURCES := $(sort $(wildcard kernels/*.cu kernels/*.cuh))
NVCC_FLAGS := -fatbin -O3 -gencode arch=compute_80,code=compute_80 -gencode arch=compute_90,code=sm_90
# The toolkit's stub libcuda.so to link the cuda build against on machines
# without the driver; the driver's libcuda.so.1 is used at run time.
CUDA_STUBS ?= $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/stubs /usr/local/cuda/lib64/stubs /usr/lib/cuda/lib64/stubs))
CUDA_ENV := CGO_LDFLAGS="$(if $(CUDA_STUBS),-L$(CUDA_STUBS)) $(CGO_LDFLAGS)"

.PHONY: kernels kernels-check build-gpu vet-gpu
kernels:
	$(NVCC) $(NVCC_FLAGS) -o kernels/zspool.fatbin kernels/zspool.cu
	sha256sum $(KERNEL_SOURCES) kernels/zspool.fatbin > kernels/SOURCES.sha256

kernels-check:
	@listed=$$(awk '{print $$2}' kernels/SOURCES.sha256 | grep -v '^kernels/zspool.fatbin$$' | sort | tr '\n' ' '); \
	  have=$$(echo $(KERNEL_SOURCES) | tr ' ' '\n' | sort | tr '\n' ' '); \
	  if [ "$$listed" != "$$have" ]; then \
	    echo "kernels/SOURCES.sha256 lists [$$listed] but the sources are [$$have]: run make kernels and commit"; exit 1; fi
	@sha256sum --check --quiet kernels/SOURCES.sha256 || \
	  { echo "kernels/zspool.fatbin was not built from these sources: run make kernels and commit"; exit 1; }
	# -a: cgo does not rebuild when layout.cuh, outside the package, changes.
	# GOMAXPROCS=8: the plans of a host with that many cores lend the CPU
	# engine's rows (StorePlan.LentRows), which CI's two cores never do; a
	# test that keeps rows without giving them back then hangs.
	GOMAXPROCS=8 $(GO) test -a -count=1 -tags hostsim ./kernels/internal/hostsim

build-gpu:
	$(CUDA_ENV) $(GO) build -buildvcs=auto -tags cuda -o zspool ./cmd/zspool

vet-gpu:
	$(CUDA_ENV) $(GO) vet -tags cuda ./...
