#!/usr/bin/env bash
# The product path, measured in one go on one GPU host and on one array of
# realistic camera data (zspool bench --data camera: bright cells, shot and
# read noise, a 100 ADU offset, drift and bleaching; 2048×2048 uint16,
# chunks 16×256×256, shards 16×2048×2048), everything on tmpfs, printed
# side by side:
#
#   1. zspool convert --engine gpu    raw file (page cache) → local directory
#   2. zspool convert --engine cpu    the same (its default encoder; 2b:
#                                     --zstd-encoder klauspost, the
#                                     default before the windowed encoder)
#   3. tensorstore                    the same array, same shapes, libzstd
#                                     at the same level
#   4. s3upload                       the AWS SDK's transfer manager uploading
#                                     item 1's dataset to a local S3 server
#   5. zspool convert --engine gpu    raw file → that S3 server, parts in
#                                     flight from the budget (5b: 64)
#   6. zspool run                     two such acquisitions spool → stored →
#                                     released on that server (the default
#                                     release: moved to the archive; delete
#                                     would add the unlink of each 16 GiB file,
#                                     ~1–2 s on tmpfs, to the next job's wait)
#
# Rows 4 and 5 also report the S3 server's CPU-seconds and the machine's
# busy share: the server shares the host's cores, and where they run out,
# what each client makes the server do decides the rate.
#
# The GPU host has no Go toolchain and no network: build the binaries here
# with bench/path-host-build.sh, which puts them in .dev/, and bring them:
#   ZSPOOL     zspool built with -tags cuda           (default .dev/zspool)
#   S3UPLOAD   bench/s3upload                         (default .dev/s3upload)
#   VERSITYGW  versitygw, stripped, maybe .xz          (default .dev/versitygw.xz)
#
# Usage: bench/path-host.sh [SIZE]   (default 16GiB; whole 8 MiB frames)
# ENGINE=cpu runs the GPU rows on the CPU engine (a dry run of the script
# on a machine without a GPU); NO_TENSORSTORE=1 skips row 3; DEBUG_LOGS=DIR
# runs rows 5 and 6 at log level debug (stage times, plan, layer events)
# and leaves their logs in DIR; LEVEL=N runs every row at zstd level N
# (default 1): the manifests' compression.level and tensorstore's.
set -euo pipefail
gpu=${ENGINE:-gpu}
size=${1:-16GiB}
level=${LEVEL:-1}
case $level in -[1-7] | [0-9] | 1[0-9] | 2[0-2]) ;; *) echo "LEVEL=$level: a zstd level, -7 to 22" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/camera.sh
. "$here/bench/camera.sh"
zspool=${ZSPOOL:-$here/.dev/zspool}
s3upload=${S3UPLOAD:-$here/.dev/s3upload}
gw=${VERSITYGW:-$here/.dev/versitygw.xz}
shm=${SHM:-/dev/shm}
work=$(mktemp -d "$shm/zspool-path.XXXXXX")
gwpid=
daemonpid=
cleanup() {
	# a daemon that died before is not there to kill: errexit must not
	# end the trap before the work directory is removed
	[ -z "$daemonpid" ] || kill "$daemonpid" 2>/dev/null || true
	stop_versitygw
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
[ -n "${NO_TENSORSTORE:-}" ] || python3 -c 'import tensorstore' || { echo "python3 cannot import tensorstore" >&2; exit 1; }

# timed CMD…: runs CMD, then prints its wall seconds and peak RSS.
timed() {
	python3 - "$@" <<'PY'
import resource, subprocess, sys, time
t = time.monotonic()
rc = subprocess.call(sys.argv[1:])
wall = time.monotonic() - t
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"wall {wall:.3f} s, peak RSS {rss:.0f} MiB", flush=True)
sys.exit(rc)
PY
}
calc() { awk "BEGIN { printf \"%.6f\", $* }"; }

"$zspool" version
echo "== the engine alone: generating $size of camera data, then GPU bench from the file into nothing"
"$zspool" bench --engine "$gpu" --source file --data camera --size "$size" --depth 16 --shard 8 --level "$level" \
	--keep "$work/cam.raw" | tee "$work/engine.out"
frames=$(( $(stat -c %s "$work/cam.raw") / (2048 * 2048 * 2) ))
camera_manifest "$work/cam.json" cam.raw cam 16 1 "$level"
cat "$work/cam.raw" >/dev/null # in the page cache, as an acquisition just written is
warm_memory "$work" $((2 * $(stat -c %s "$work/cam.raw")))

echo "== 1. zspool convert --engine gpu → $shm"
timed "$zspool" convert "$work/cam.json" --dest "$work/gpu" --engine "$gpu" --quiet | tee "$work/1.out"
echo "== 2. zspool convert --engine cpu → $shm"
timed "$zspool" convert "$work/cam.json" --dest "$work/cpu" --engine cpu --quiet | tee "$work/2.out"
stored_cpu=$(du -sb "$work/cpu" | cut -f1)
rm -rf "$work/cpu"
echo "== 2b. zspool convert --engine cpu --zstd-encoder klauspost → $shm"
timed "$zspool" convert "$work/cam.json" --dest "$work/cpu" --engine cpu --zstd-encoder klauspost --quiet | tee "$work/2b.out"
stored_kl=$(du -sb "$work/cpu" | cut -f1)
rm -rf "$work/cpu"
echo "== 3. tensorstore → $shm"
if [ -n "${NO_TENSORSTORE:-}" ]; then
	echo "skipped (NO_TENSORSTORE)" >"$work/3.out"
else
	python3 "$here/bench/tensorstore_write.py" --raw "$work/cam.raw" --shape "$frames,2048,2048" --chunk 16,256,256 \
		--shard 16,2048,2048 --level "$level" --out "$work/ts" | tee "$work/3.out"
fi
rm -rf "$work/ts"

echo "== the S3 server: versitygw, posix backend on $shm"
start_versitygw "$work" "$gw"

# What an upload costs the host, where the S3 server shares its cores: the
# server's CPU-seconds and the whole machine's busy share over a run.
gwcpu() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$gwpid/stat"; }
busy() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat; }
# cost CMD…: runs CMD, then appends to cost.out "server CPU-s, busy %".
cost() {
	local g0 b0 t0 b1 t1
	g0=$(gwcpu)
	read -r b0 t0 < <(busy)
	"$@"
	read -r b1 t1 < <(busy)
	echo "$(calc "$(gwcpu) - $g0") $(calc "100 * ($b1 - $b0) / ($t1 - $t0)")" >>"$work/cost.out"
}
echo "== 4. transfer manager: item 1's dataset → S3"
cost "$s3upload" -endpoint "$endpoint" -dir "$work/gpu/cam.ome.zarr" -dest s3://bench/tm | tee "$work/4.out"
out_bytes=$(du -sb "$work/gpu/cam.ome.zarr" | cut -f1)
rm -rf "$work/gpu" "$work/s3/bench/tm" "$work/sidecar/bench/tm"
echo "== 5. zspool convert --engine gpu → S3"
quiet=(--quiet)
[ -z "${DEBUG_LOGS:-}" ] || quiet=(--quiet --log-level debug)
cost timed "$zspool" convert "$work/cam.json" --dest s3://bench/zs --engine "$gpu" --endpoint "$endpoint" --path-style "${quiet[@]}" 2>"$work/5.log" | tee "$work/5.out"
grep -v DEBUG "$work/5.log" || true
rm -rf "$work/s3/bench/zs" "$work/sidecar/bench/zs"
echo "== 5b. the same with 64 parts in flight"
timed "$zspool" convert "$work/cam.json" --dest s3://bench/zs --engine "$gpu" --endpoint "$endpoint" --path-style \
	--max-parts-in-flight 64 --quiet | tee "$work/5b.out"
rm -rf "$work/s3/bench/zs" "$work/sidecar/bench/zs"

echo "== 6. zspool run: two acquisitions spool → stored → released"
mkdir -p "$work/spool" "$work/state"
cat >"$work/zspool.yaml" <<YAML
spool_dir: $work/spool
state_dir: $work/state
destination:
  url: s3://bench/daemon
  endpoint: $endpoint
  path_style: true
engine: $gpu
settle: 0s
rescan_interval: 1s
metrics:
  listen: "off"
YAML
cp "$work/cam.raw" "$work/state/acq2.raw" # a copy, made beside the spool, moved in whole
mv "$work/cam.raw" "$work/state/acq1.raw"
start=$(date +%s.%N)
for i in 1 2; do
	mv "$work/state/acq$i.raw" "$work/spool/acq$i.raw"
	camera_manifest "$work/state/acq$i.json" "acq$i.raw" "acq$i" 16 1 "$level"
	mv "$work/state/acq$i.json" "$work/spool/acq$i.json"
done
[ -z "${DEBUG_LOGS:-}" ] || echo "log_level: debug" >>"$work/zspool.yaml"
"$zspool" run --config "$work/zspool.yaml" >"$work/daemon.log" 2>&1 &
daemonpid=$!
while [ "$(grep -c 'job released' "$work/daemon.log")" -lt 2 ]; do
	kill -0 "$daemonpid" 2>/dev/null || { echo "the daemon exited:"; tail -20 "$work/daemon.log"; exit 1; }
	sleep 0.05
done
end=$(date +%s.%N)
kill "$daemonpid"
wait "$daemonpid" 2>/dev/null || true
daemonpid=
daemon_s=$(calc "$end - $start")
[ -z "${DEBUG_LOGS:-}" ] || cp "$work/5.log" "$work/daemon.log" "$DEBUG_LOGS/"

wall_of() { sed -n 's/^wall \([0-9.]*\) s.*/\1/p' "$1" | tail -1; }
rss_of() { sed -n 's/.*peak RSS \([0-9]*\) MiB.*/\1/p' "$1" | tail -1; }
raw_gib=$(calc "$frames * 8 / 1024")
out_gib=$(calc "$out_bytes / 1073741824")
ts_rate=$(sed -n 's/.*(\([0-9.]*\) GiB\/s).*/\1/p' "$work/3.out" | tail -1)
tm_rate=$(sed -n 's/.* \([0-9.]*\) GiB\/s (.*/\1/p' "$work/4.out" | tail -1)
zs_rate=$(rate_of "$work/5.out")
# Rates are convert's own (its summary line: from the plan to the group
# document, as the transfer manager's is from its first request to its
# last), output bytes at the stored/raw ratio; the process's wall time,
# start-up (the GPU's context, the S3 probe) included, stands beside them.
out_rate() { calc "$(rate_of "$1") * $out_gib / $raw_gib"; }
zs_out=$(out_rate "$work/5.out")
echo
echo "== $(printf '%.1f' "$raw_gib") GiB of camera data (stored: $(printf '%.2f' "$out_gib") GiB), zstd level $level, one run on $(hostname), $(nproc) cores"
printf '%-44s %12s %12s %10s %10s\n' "path" "GiB/s raw" "GiB/s out" "wall s" "RSS MiB"
printf '%-44s %12.3f %12s %10s %10s\n' "1. zspool convert --engine gpu → tmpfs" "$(rate_of "$work/1.out")" "" "$(wall_of "$work/1.out")" "$(rss_of "$work/1.out")"
printf '%-44s %12.3f %12s %10s %10s\n' "2. zspool convert --engine cpu → tmpfs" "$(rate_of "$work/2.out")" "" "$(wall_of "$work/2.out")" "$(rss_of "$work/2.out")"
printf '%-44s %12.3f %12s %10s %10s\n' "2b. the same, --zstd-encoder klauspost" "$(rate_of "$work/2b.out")" "" "$(wall_of "$work/2b.out")" "$(rss_of "$work/2b.out")"
# A skipped row 3 has no rate: it prints "-", and so does the CPU's share of it.
printf '%-44s %12s %12s %10s %10s\n' "3. tensorstore → tmpfs" "${ts_rate:--}" "" "" ""
printf '%-44s %12s %12.3f %10s %10s\n' "4. transfer manager upload of 1's dataset" "" "$tm_rate" "" ""
printf '%-44s %12.3f %12.3f %10s %10s\n' "5. zspool convert --engine gpu → S3" "$zs_rate" "$zs_out" "$(wall_of "$work/5.out")" "$(rss_of "$work/5.out")"
printf '%-44s %12.3f %12.3f %10s %10s\n' "5b. the same, 64 parts in flight" "$(rate_of "$work/5b.out")" "$(out_rate "$work/5b.out")" "$(wall_of "$work/5b.out")" "$(rss_of "$work/5b.out")"
printf '%-44s %12.3f %12s %10.3f %10s\n' "6. zspool run, 2 acquisitions → released" "$(calc "2 * $raw_gib / $daemon_s")" "" "$daemon_s" ""
echo
cpu_vs_ts=-
[ -z "$ts_rate" ] || cpu_vs_ts=$(printf '%.2f×' "$(calc "$(rate_of "$work/2.out") / $ts_rate")")
printf 'CPU vs tensorstore: %s; S3 out vs transfer manager: %.2f×; daemon vs convert to S3: %.2f×\n' \
	"$cpu_vs_ts" "$(calc "$zs_out / $tm_rate")" \
	"$(calc "2 * $raw_gib / $daemon_s / $zs_rate")"
read -r tm_srv tm_busy < <(sed -n 1p "$work/cost.out")
read -r zs_srv zs_busy < <(sed -n 2p "$work/cost.out")
printf 'S3 server CPU-seconds (machine busy): 4. transfer manager %.1f (%.0f%%); 5. zspool convert %.1f (%.0f%%, its start-up included)\n' \
	"$tm_srv" "$tm_busy" "$zs_srv" "$zs_busy"
ratio() { calc "$raw_gib * 1073741824 / $1"; }
ts_ratio=$(sed -n 's/.* ratio \([0-9.]*\),.*/\1/p' "$work/3.out" | tail -1)
printf 'ratio (raw / stored bytes): 1. gpu %.3f; 2. cpu %.3f; 2b. cpu klauspost %.3f; 3. tensorstore %s\n' \
	"$(ratio "$out_bytes")" "$(ratio "$stored_cpu")" "$(ratio "$stored_kl")" "${ts_ratio:--}"
