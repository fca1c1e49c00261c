#!/usr/bin/env bash
# Converts a 2 GiB synthetic acquisition with 256 MiB shards and 8 MiB parts
# to a local MinIO, and reports: the planner's working-set estimate, the
# peak RSS (/usr/bin/time), and each shard's part count from its multipart
# ETag. MinIO comes from .ci/install-s3-servers.sh's cache.
#
# Usage: bench/s3-large.sh [SIZE]   (default 2GiB)
set -euo pipefail
size=${1:-2GiB}
here=$(cd "$(dirname "$0")/.." && pwd)
tools="${ZSPOOL_TOOLS:-$HOME/.cache/zspool}"
minio="$tools/minio-v0.0.0-20260212201848-7aac2a2c5b7c/minio"
[ -x "$minio" ] || "$here/.ci/install-s3-servers.sh"
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
user=bench$RANDOM$RANDOM
pass=$(head -c 24 /dev/urandom | base64 | tr -dc A-Za-z0-9)
cleanup() { [ -n "${mpid:-}" ] && kill "$mpid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

HOME=$work MINIO_ROOT_USER=$user MINIO_ROOT_PASSWORD=$pass MINIO_UPDATE=off MINIO_BROWSER=off MINIO_CI_CD=1 \
	"$minio" server "$work/data" --address "127.0.0.1:$port" >"$work/minio.log" 2>&1 &
mpid=$!
for _ in $(seq 1 60); do curl -sf "http://127.0.0.1:$port/minio/health/live" && break; sleep 0.5; done
curl -sf -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" --user "$user:$pass" "http://127.0.0.1:$port/bench" >/dev/null

go build -o "$work/zspool" "$here/cmd/zspool"
"$work/zspool" bench --size "$size" --keep "$work/big.raw" >/dev/null 2>&1
cat >"$work/big.json" <<JSON
{"version":1,"dtype":"uint16","data":"big.raw","dimensions":[
 {"name":"t","type":"time","size":0,"chunk":1,"shard":32},
 {"name":"y","type":"space","size":2048,"chunk":256,"shard":8},
 {"name":"x","type":"space","size":2048,"chunk":256,"shard":8}]}
JSON
export AWS_ACCESS_KEY_ID=$user AWS_SECRET_ACCESS_KEY=$pass AWS_EC2_METADATA_DISABLED=true
/usr/bin/time -v "$work/zspool" convert "$work/big.json" --dest s3://bench/run --endpoint "http://127.0.0.1:$port" \
	--path-style --part-size 8MiB --log-level debug --quiet >"$work/out" 2>"$work/err"
cat "$work/out"
grep -o '"working_set": "[^"]*"' "$work/err" | head -1
grep -E "Maximum resident|Elapsed \(wall" "$work/err"
for g in $(seq 0 7); do
	etag=$(curl -sI --aws-sigv4 "aws:amz:us-east-1:s3" --user "$user:$pass" \
		"http://127.0.0.1:$port/bench/run/big.ome.zarr/0/c/$g/0/0" | tr -d '\r' | sed -n 's/^[Ee][Tt]ag: //p')
	echo "shard c/$g/0/0: ETag $etag"
done
