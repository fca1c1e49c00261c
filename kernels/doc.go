// Package kernels is zspool's GPU engine, a peer of the CPU engine
// (pipeline/cpu) that engine.New picks when a GPU is usable. Its CUDA
// kernels cut raw epochs into chunks, reduce the pyramid levels, encode
// each chunk as a zstd frame byte-identical to zstdlit's (the Go reference
// in package zstdlit), and gather the frames into shard order, driven
// through gorgonia.org/cu with pinned double-buffered staging and separate
// streams for host-to-device copies, compute and device-to-host copies.
//
// The engine's files follow its steps: engine.go (the type, Encode and
// Flush), engine_memory.go (what it allocates), engine_submit.go (what it
// queues per epoch), engine_collect.go (what comes back, as chunk rows),
// engine_stages.go (stage timing); device.go holds the CUDA context and
// kernels, litbatch.go and zstdlit.go the encoder's batches.
//
// Everything that needs CUDA is behind the build tag `cuda`; without it the
// package holds only this documentation, so the default build needs no
// CUDA toolkit or driver. Build the GPU engine with `go build -tags cuda`
// (the toolkit's headers, and libcuda at link time: see the Makefile).
//
// The kernels are written in CUDA C (zspool.cu and its headers) and compiled by
// `make kernels` into zspool.fatbin — compute_80 PTX, which any newer GPU
// can JIT, plus sm_90 machine code for Hopper — which is committed and
// embedded. SOURCES.sha256 records the sources it was built from; `make
// kernels-check` fails when they drift apart.
package kernels
