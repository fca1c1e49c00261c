#!/usr/bin/env bash
# Compares, in one run on one GPU host and on the same array, zspool's GPU
# engine (its own zstd kernels), zspool's CPU engine and tensorstore's Zarr v3
# sharded zstd write (Python's tensorstore package), all with the same chunk
# and shard shapes, and prints the three rates side by side.
#
#   1. zspool bench --engine cpu --keep: writes the synthetic bench mix
#      (12-bit gaussian, uniform and constant 2048×2048 uint16 frames) to a
#      raw file and converts it, from the page cache, into a sink that keeps
#      nothing.
#   2. zspool bench --engine gpu --source file: the same file.
#   3. zspool bench --engine gpu: frames placed in the engine's pinned
#      staging buffers (no reader), the GPU engine's own ceiling.
#   4. bench/tensorstore_write.py: tensorstore writes the same file as Zarr
#      v3 sharded zstd into a tmpfs.
#
# Usage: bench/gpu-host.sh [SIZE]   (default 8GiB)
# Needs a binary built with -tags cuda: $ZSPOOL, or one built here with Go.
set -euo pipefail
size=${1:-8GiB}
depth=${DEPTH:-16}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/zspool-gpu-host.XXXXXX")
tsout=/dev/shm/zspool-tensorstore.$$
[ -d /dev/shm ] || tsout="$work/tensorstore"
trap 'rm -rf "$work" "$tsout"' EXIT

zspool=${ZSPOOL:-}
if [ -z "$zspool" ]; then
	zspool="$work/zspool"
	go build -tags cuda -o "$zspool" "$here/cmd/zspool"
fi
python3 -c 'import tensorstore' || { echo "python3 cannot import tensorstore (pip install tensorstore)" >&2; exit 1; }

"$zspool" version
echo "== zspool CPU engine, raw file"
"$zspool" bench --engine cpu --size "$size" --depth "$depth" --keep "$work/bench.raw" | tee "$work/cpu.out"
echo "== zspool GPU engine, raw file"
"$zspool" bench --engine gpu --size "$size" --depth "$depth" --source file | tee "$work/gpu-file.out"
echo "== zspool GPU engine, pinned staging"
"$zspool" bench --engine gpu --size "$size" --depth "$depth" --source pinned | tee "$work/gpu-pinned.out"

grid=$(grep -m1 '^grid:' "$work/cpu.out")
shape=$(echo "$grid" | sed -n 's/.*shape \([0-9,]*\).*/\1/p')
chunk=$(echo "$grid" | sed -n 's/.*chunk \([0-9,]*\).*/\1/p')
shard=$(echo "$grid" | sed -n 's/.*shard \([0-9,]*\).*/\1/p')
echo "== tensorstore, raw file, shape $shape chunk $chunk shard $shard"
python3 "$here/bench/tensorstore_write.py" --raw "$work/bench.raw" --shape "$shape" --chunk "$chunk" \
	--shard "$shard" --level 1 --out "$tsout" | tee "$work/ts.out"

rate() { sed -n 's/.*(\([0-9.]*\) GiB\/s).*/\1/p' "$1" | tail -1; }
ratio() { sed -n 's/.*ratio \([0-9.]*\),.*/\1/p' "$1" | tail -1; }
echo
echo "== same array ($size of the bench mix, chunk $chunk, shard $shard), one run on $(hostname)"
printf '%-34s %10s %8s\n' "writer" "GiB/s" "ratio"
printf '%-34s %10s %8s\n' "zspool GPU engine, pinned staging" "$(rate "$work/gpu-pinned.out")" "$(ratio "$work/gpu-pinned.out")"
printf '%-34s %10s %8s\n' "zspool GPU engine, raw file" "$(rate "$work/gpu-file.out")" "$(ratio "$work/gpu-file.out")"
printf '%-34s %10s %8s\n' "zspool CPU engine, raw file" "$(rate "$work/cpu.out")" "$(ratio "$work/cpu.out")"
printf '%-34s %10s %8s\n' "tensorstore zarr3, raw file" "$(rate "$work/ts.out")" "$(ratio "$work/ts.out")"
