#!/usr/bin/env bash
# Measures zspool's CPU engine against the zstd CLI on the same bytes, in one
# run: `zspool bench --keep` writes the synthetic bench mix to a file and
# converts it into a discard sink; `zstd -1 -T<cores>` then compresses that
# same file (hot in the page cache for both). Prints both throughputs, both
# ratios and the two quotients the CPU-pipeline issue asks about.
#
# Usage: bench/cpu-vs-zstd.sh [SIZE]   (default 2GiB)
set -euo pipefail
size=${1:-2GiB}
cores=$(nproc)
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

command -v zstd >/dev/null || { echo "zstd CLI not found (apt-get install zstd)" >&2; exit 1; }
go build -o "$work/zspool" "$here/cmd/zspool"

"$work/zspool" bench --size "$size" --keep "$work/bench.raw" | tee "$work/zspool.out"
# zspool prints GiB/s; the comparison below is in GB/s (10^9 bytes).
zs_gibs=$(sed -n 's/^end-to-end:.* \([0-9.]*\) GiB\/s.*/\1/p' "$work/zspool.out")
zs_gbs=$(awk -v g="$zs_gibs" 'BEGIN { printf "%.3f", g * 1.073741824 }')
zs_ratio=$(sed -n 's/^end-to-end:.*ratio \([0-9.]*\),.*/\1/p' "$work/zspool.out")

in_bytes=$(stat -c %s "$work/bench.raw")
cat "$work/bench.raw" > /dev/null # both tools read from the page cache
best=""
for run in 1 2 3; do
	t0=$(date +%s.%N)
	out_bytes=$(zstd -q -1 -T"$cores" -c "$work/bench.raw" | wc -c)
	t1=$(date +%s.%N)
	s=$(echo "$t1 - $t0" | bc -l)
	if [ -z "$best" ] || [ "$(echo "$s < $best" | bc -l)" = 1 ]; then best=$s; fi
done
z_gbs=$(echo "$in_bytes / $best / 1000000000" | bc -l)
z_ratio=$(echo "$in_bytes / $out_bytes" | bc -l)

printf '\nzstd -1 -T%d:  %.3f GB/s (best of 3), ratio %.4f\n' "$cores" "$z_gbs" "$z_ratio"
printf 'zspool bench: %.3f GB/s, ratio %.4f\n' "$zs_gbs" "$zs_ratio"
printf 'throughput zspool/zstd: %.3f (target >= 0.8)\n' "$(echo "$zs_gbs / $z_gbs" | bc -l)"
printf 'ratio zspool/zstd:      %.4f (target within 1%%)\n' "$(echo "$zs_ratio / $z_ratio" | bc -l)"
