#!/usr/bin/env bash
# Converts one acquisition of realistic camera data (zspool bench --data
# camera; chunks 1×256×256, shards 16×2048×2048) under several memory
# budgets, one after another, and prints each run's rate, its wall time and
# its peak RSS against the budget: a larger budget must never be slower,
# and no run may outgrow its budget.
#
# Usage: bench/budgets.sh [SIZE] [BUDGET…]   (default 2GiB; 256MiB 768MiB 4GiB)
set -euo pipefail
size=${1:-2GiB}
shift || true
budgets=("$@")
[ ${#budgets[@]} -gt 0 ] || budgets=(256MiB 768MiB 4GiB)
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/camera.sh
. "$here/bench/camera.sh"
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
zspool=${ZSPOOL:-}
if [ -z "$zspool" ]; then
	zspool="$work/zspool"
	go build -o "$zspool" "$here/cmd/zspool"
fi
"$zspool" bench --engine cpu --data camera --size "$size" --keep "$work/cam.raw" >/dev/null 2>&1
camera_manifest "$work/cam.json" cam.raw cam 1 16 1
cat "$work/cam.raw" >/dev/null
# One conversion first, not counted: the first run into a fresh output
# directory pays for the filesystem's first touch of its pages (measured:
# 20-25% slower, whichever budget came first).
"$zspool" convert "$work/cam.json" --dest "$work/out" --quiet >/dev/null
printf '%-10s %10s %10s %12s %s\n' budget "GiB/s" "wall s" "RSS MiB" "plan"
for b in "${budgets[@]}"; do
	rm -rf "$work/out"
	/usr/bin/time -v "$zspool" convert "$work/cam.json" --dest "$work/out" --memory-budget "$b" --log-level debug --quiet \
		>"$work/out.txt" 2>"$work/err.txt"
	rate=$(rate_of "$work/out.txt")
	wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): \(.*\)/\1/p' "$work/err.txt")
	rss=$(sed -n 's/.*Maximum resident set size (kbytes): \([0-9]*\)/\1/p' "$work/err.txt")
	plan=$(grep -o '"layers_in_flight": [0-9]*, "store_queue": "[^"]*", "engine_rows": [0-9]*' "$work/err.txt" | head -1)
	printf '%-10s %10s %10s %12d %s\n' "$b" "$rate" "$wall" "$((rss / 1024))" "$plan"
done
