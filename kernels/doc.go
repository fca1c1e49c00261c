// Package kernels is zspool's GPU engine: CUDA kernels that cut raw epochs
// into chunks and gather them into shard order, driven through
// gorgonia.org/cu, with pinned double-buffered staging and separate streams
// for host-to-device copies, compute and device-to-host copies.
//
// Everything that needs CUDA is behind the build tag `cuda`; without it the
// package holds only this documentation, so the default build needs no
// CUDA toolkit or driver. Build the GPU engine with `go build -tags cuda`
// (the toolkit's headers, and libcuda at link time: see the Makefile).
//
// The kernels are written in CUDA C (zspool.cu, layout.cuh) and compiled by
// `make kernels` into zspool.fatbin — compute_80 PTX, which any newer GPU
// can JIT, plus sm_90 machine code for Hopper — which is committed and
// embedded. SOURCES.sha256 records the sources it was built from; `make
// kernels-check` fails when they drift apart.
package kernels
