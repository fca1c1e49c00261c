#!/usr/bin/env bash
# Two zspool builds side by side on one host: the same realistic camera
# data (zspool bench --data camera: bright cells, 2048×2048 uint16, chunks
# 16×256×256, shards 16×2048×2048) converted from the page cache to tmpfs
# by build A and build B in turn, at each zstd level asked for, for several
# rounds. Alternating the builds within a round keeps a machine's drift
# (page cache, clocks, a neighbour) out of the comparison, which a run of A
# followed later by a run of B would fold into it; which build goes first
# alternates from round to round too.
#
#   A=.dev/zspool B=.dev/zspool-old LEVELS="1 3" ROUNDS=3 bench/convert-ab.sh 16GiB
#
# A and B are zspool binaries (B optional: then A alone, at each level);
# ENGINE (default gpu) is passed to --engine; DATA (default camera) to
# zspool bench --data: camera, dim, flat, 8bit or 8bit-saturated;
# CHECKSUM=1 converts with --zstd-checksum; S3=1 converts to a local
# versitygw (its posix backend on the same tmpfs; VERSITYGW, default
# .dev/versitygw.xz from bench/path-host-build.sh, is its binary or the
# binary xz-compressed) instead of a directory, the product path on S3,
# where the server shares the host's cores. Each
# convert prints its own summary line; the table at the end gives, per
# build and level, every round's rate (convert's own, from the plan to the
# group document), the median, the process's wall time and the stored
# bytes, which must be equal between builds that write the same objects.
set -euo pipefail
size=${1:-16GiB}
a=${A:-.dev/zspool}
b=${B:-}
levels=${LEVELS:-1}
rounds=${ROUNDS:-3}
engine=${ENGINE:-gpu}
data=${DATA:-camera}
checksum=${CHECKSUM:-0}
s3=${S3:-0}
gw=${VERSITYGW:-.dev/versitygw.xz}
case $data in camera | bright | dim | flat | 8bit | 8bit-saturated) ;; *) echo "DATA=$data: camera, dim, flat, 8bit or 8bit-saturated" >&2; exit 2 ;; esac
case $checksum in 0) flags=() ;; 1) flags=(--zstd-checksum) ;; *) echo "CHECKSUM=$checksum: 0 or 1" >&2; exit 2 ;; esac
case $s3 in 0 | 1) ;; *) echo "S3=$s3: 0 or 1" >&2; exit 2 ;; esac
[ "$s3" = 0 ] || [ -f "$gw" ] || { echo "VERSITYGW=$gw: no versitygw binary there (bench/path-host-build.sh makes .dev/versitygw.xz)" >&2; exit 2; }
case $rounds in [1-9] | [1-9][0-9]) ;; *) echo "ROUNDS=$rounds: a count, 1 to 99" >&2; exit 2 ;; esac
for level in $levels; do
	case $level in -[1-7] | [0-9] | 1[0-9] | 2[0-2]) ;; *) echo "LEVELS: $level is not a zstd level, -7 to 22" >&2; exit 2 ;; esac
done
builds=(A)
[ -z "$b" ] || builds+=(B)
for x in "$a" $b; do [ -x "$x" ] || { echo "$x: not an executable zspool" >&2; exit 2; }; done
# shellcheck source=bench/camera.sh
. "$(dirname "$0")/camera.sh"
dtype=$(camera_dtype "$data")
elem=2
[ "$dtype" = uint16 ] || elem=1
work=$(mktemp -d "${SHM:-/dev/shm}/zspool-ab.XXXXXX")
gwpid=
cleanup() {
	stop_versitygw
	rm -rf "$work"
}
trap cleanup EXIT

bin() { if [ "$1" = A ]; then echo "$a"; else echo "$b"; fi; }
for x in "${builds[@]}"; do echo "build $x: $(bin "$x") ($("$(bin "$x")" version | head -1))"; done
echo "== generating $size of camera data ($data)"
"$a" bench --engine "$engine" --source file --data "$data" --size "$size" --depth 16 --shard 8 --keep "$work/cam.raw" >/dev/null
frames=$(($(stat -c %s "$work/cam.raw") / (2048 * 2048 * elem)))
cat "$work/cam.raw" >/dev/null # in the page cache, as an acquisition just written is
warm_memory "$work" $((2 * $(stat -c %s "$work/cam.raw")))
for level in $levels; do
	camera_manifest "$work/cam$level.json" cam.raw cam 16 1 "$level" "$dtype"
done

# Where each convert writes, and where its stored bytes are counted: the
# directory, or the server's copy of the prefix (objects as files).
dest=(--dest "$work/out")
stored_at=$work/out
where=tmpfs
if [ "$s3" = 1 ]; then
	start_versitygw "$work" "$gw"
	dest=(--dest s3://bench/ab --endpoint "$endpoint" --path-style)
	stored_at=$work/s3/bench/ab
	where="versitygw on tmpfs"
fi

: >"$work/results"
for r in $(seq 1 "$rounds"); do
	# A goes first in odd rounds and B in even ones: a host that favours
	# a round's first convert (or its second) then tilts neither build.
	order=("${builds[@]}")
	if [ $((r % 2)) -eq 0 ] && [ ${#builds[@]} -eq 2 ]; then order=(B A); fi
	for level in $levels; do
		for x in "${order[@]}"; do
			start=$(date +%s.%N)
			line=$("$(bin "$x")" convert "$work/cam$level.json" "${dest[@]}" --engine "$engine" ${flags[@]+"${flags[@]}"} --quiet)
			end=$(date +%s.%N)
			rate=$(rate_of <<<"$line")
			stored=$(du -sb "$stored_at" | cut -f1)
			rm -rf "$stored_at" "$work/sidecar/bench/ab"
			echo "round $r level $level build $x: $line"
			echo "$x $level $r $rate $(awk "BEGIN { printf \"%.3f\", $end - $start }") $stored" >>"$work/results"
		done
	done
done

echo
echo "== $frames frames ($size) of camera data ($data, $dtype), engine $engine → $where$([ "$checksum" = 1 ] && echo ", --zstd-checksum"), $rounds rounds, on $(hostname), $(nproc) cores"
printf '%-6s %-6s %-40s %8s %24s %14s\n' build level "GiB/s by round" median "wall s by round" "stored bytes"
for level in $levels; do
	for x in "${builds[@]}"; do
		rows=$(awk -v x="$x" -v l="$level" '$1 == x && $2 == l' "$work/results" | sort -k3n)
		rates=$(awk '{ printf "%s%s", (NR > 1 ? " " : ""), $4 }' <<<"$rows")
		walls=$(awk '{ printf "%s%s", (NR > 1 ? "," : ""), $5 }' <<<"$rows")
		median=$(awk '{ print $4 }' <<<"$rows" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
		stored=$(awk '{ print $6 }' <<<"$rows" | sort -u | tr '\n' ' ')
		printf '%-6s %-6s %-40s %8.3f %24s %14s\n' "$x" "$level" "$rates" "$median" "$walls" "$stored"
	done
done
