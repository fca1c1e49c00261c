#!/usr/bin/env bash
# The GPU zstd kernels of two builds side by side on one GPU:
# BenchmarkLitKernels (every stage on a 1 GiB batch resident on the GPU,
# no copies: engine-only figures) run by test binary A and test binary B
# in turn, for several rounds. Alternating within a round keeps the GPU's
# drift (clocks, a neighbour) out of the comparison. The binaries are
# built here and carried to the GPU host, which needs no Go:
#
#   CGO_LDFLAGS=-L/usr/lib/x86_64-linux-gnu/stubs go test -c -tags cuda -o .dev/kernels.test ./kernels
#   (the same at the other revision, e.g. in a git worktree, into .dev/kernels-old.test)
#   A=.dev/kernels.test B=.dev/kernels-old.test ROUNDS=2 bench/kernels-ab.sh
#
# The argument is the benchmark's sub-benchmark pattern (default: the
# realistic camera sets in 2 MiB chunks at levels 1 and 3, as issue 18
# measures them, and at level 1 also with the checksum and on every
# position, which go test runs as sub-benchmarks of those). The table at the end gives, per benchmark and build,
# every round's GB/s (1 GiB over the benchmark's ns/op), the median, the
# median of the kernels' own rate (kernelGB/s: 1 GiB over the time between
# the CUDA events recorded before the first kernel and after the last; the
# ns/op also holds the benchmark's poisoning of the output, a memset
# outside those events there so that a byte the kernels fail to write shows
# in the tests, and the host's wait for the batch), each stage's median
# milliseconds a GiB and the ratio, which must be equal between builds
# that write the same bytes.
set -euo pipefail
pattern=${1:-'camera-.*/chunk=2048KiB/level=[13]$'}
a=${A:-.dev/kernels.test}
b=${B:-}
rounds=${ROUNDS:-2}
benchtime=${BENCHTIME:-20x}
case $rounds in [1-9] | [1-9][0-9]) ;; *) echo "ROUNDS=$rounds: a count, 1 to 99" >&2; exit 2 ;; esac
case $benchtime in [1-9]*x) ;; *) echo "BENCHTIME=$benchtime: runs of the batch, as 20x" >&2; exit 2 ;; esac
builds=(A)
[ -z "$b" ] || builds+=(B)
for x in "$a" $b; do [ -x "$x" ] || { echo "$x: not an executable kernels test binary" >&2; exit 2; }; done
a=$(realpath "$a")
[ -z "$b" ] || b=$(realpath "$b")
bin() { if [ "$1" = A ]; then echo "$a"; else echo "$b"; fi; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The benchmark reads nothing relative to its directory, but a test binary
# runs from its package's, as go test would.
cd "$(dirname "$0")/../kernels"
: >"$work/results"
for r in $(seq 1 "$rounds"); do
	for x in "${builds[@]}"; do
		echo "== round $r build $x: $(bin "$x")"
		"$(bin "$x")" -test.run '^$' -test.bench "BenchmarkLitKernels/$pattern" -test.benchtime "$benchtime" >"$work/out" 2>&1 ||
			{ cat "$work/out" >&2; exit 1; }
		grep -E '^Benchmark|skip' "$work/out" || true
		# name ns/op, then each metric as value unit: kept as name=value
		awk -v x="$x" -v r="$r" '/^BenchmarkLitKernels\// {
			name = $1; sub(/^BenchmarkLitKernels\//, "", name); sub(/-[0-9]+$/, "", name)
			line = x " " r " " name " gbs=" sprintf("%.2f", 1073741824 / $3)
			for (i = 5; i < NF; i += 2) line = line " " $(i + 1) "=" $i
			print line
		}' "$work/out" >>"$work/results"
	done
done

if [ ! -s "$work/results" ]; then
	echo "no benchmark ran: no usable GPU, or the pattern $pattern matched nothing" >&2
	exit 1
fi
echo
echo "== BenchmarkLitKernels/$pattern, $rounds rounds, $benchtime each, on $(hostname)"
median() { sort -g | awk '{ v[NR] = $1 } END { printf "%.2f\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
metric() { tr ' ' '\n' | awk -F= -v k="$1" '$1 == k { print $2 }'; }
printf '%-58s %-5s %-24s %7s %7s  %-34s %s\n' benchmark build "GB/s by round" median kernels "ms a GiB: seed parse seq pack rest" ratio
for name in $(awk '{ print $3 }' "$work/results" | awk '!seen[$0]++'); do
	for x in "${builds[@]}"; do
		rows=$(awk -v x="$x" -v n="$name" '$1 == x && $3 == n' "$work/results")
		[ -n "$rows" ] || continue
		rates=$(metric gbs <<<"$rows" | tr '\n' ' ')
		stages=""
		for s in seed-ms parse-ms seq-ms pack-ms rest-ms; do
			stages="$stages $(metric "$s" <<<"$rows" | median)"
		done
		ratio=$(metric ratio <<<"$rows" | sort -u | tr '\n' ' ')
		printf '%-58s %-5s %-24s %7.2f %7.2f %-34s %s\n' "$name" "$x" "$rates" "$(metric gbs <<<"$rows" | median)" \
			"$(metric kernelGB/s <<<"$rows" | median)" "$stages" "$ratio"
	done
done
