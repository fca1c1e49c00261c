# Shared by the bench scripts that convert zspool bench's camera data
# (2048×2048 uint16 frames): sourced, not run.

# camera_manifest FILE DATA NAME T_CHUNK T_SHARD LEVEL [DTYPE] writes to
# FILE the manifest of the raw file DATA (a name beside FILE) as
# acquisition NAME: T_CHUNK frames a chunk and T_SHARD chunks a shard along
# t, 256×256 chunks and 8×8 chunks a shard in y and x, zstd at LEVEL, the
# pixels DTYPE (default uint16).
camera_manifest() {
	cat >"$1" <<JSON
{"version": 1, "data": "$2", "dtype": "${7:-uint16}", "name": "$3",
 "dimensions": [
  {"name": "t", "type": "time", "size": 0, "chunk": $4, "shard": $5},
  {"name": "y", "type": "space", "size": 2048, "chunk": 256, "shard": 8, "unit": "micrometer", "scale": 0.65},
  {"name": "x", "type": "space", "size": 2048, "chunk": 256, "shard": 8, "unit": "micrometer", "scale": 0.65}],
 "compression": {"codec": "zstd", "level": $6}}
JSON
}

# camera_dtype DATA is the dtype of zspool bench --data DATA's frames.
camera_dtype() { case $1 in 8bit*) echo uint8 ;; *) echo uint16 ;; esac; }

# rate_of [FILE] is the GiB/s of the last summary line zspool convert
# wrote to FILE, or to standard input ("NAME: in …, 12.26 GiB/s -> DEST").
rate_of() { sed -n 's/.* \([0-9.]*\) GiB\/s -> .*/\1/p' "${1:--}" | tail -1; }

# warm_memory DIR BYTES writes and removes BYTES of zeros in DIR. A freshly
# started VM backs its memory on first touch, and that cost would land on
# whichever convert first writes its output to tmpfs (measured: the GPU
# row at 3.8 instead of 10 GiB/s); an acquisition server that has been up
# a while has none of it.
warm_memory() {
	dd if=/dev/zero of="$1/warm" bs=16M count=$(($2 / (16 << 20))) status=none
	rm "$1/warm"
}

# start_versitygw DIR GW starts versitygw (GW: the binary, or it
# xz-compressed, named *.xz) with its posix backend on DIR/s3 (bucket
# "bench"), its metadata in DIR/sidecar, on a free loopback port, with
# the bench's credentials exported as AWS_*. It sets gwpid and endpoint,
# and returns once the port takes connections (10 s at most). Bash alone
# finds the port and waits: a CI machine need not have python3 or curl.
start_versitygw() {
	case "$2" in
	*.xz) xz -dc "$2" >"$1/versitygw" ;;
	*) cp "$2" "$1/versitygw" ;;
	esac
	chmod +x "$1/versitygw"
	mkdir -p "$1/s3/bench" "$1/sidecar"
	local port tries
	for tries in $(seq 1 50); do
		port=$((20000 + RANDOM % 40000))
		(: <"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
	done
	export AWS_ACCESS_KEY_ID=pathbench AWS_SECRET_ACCESS_KEY=pathbench-secret-0123456789 AWS_EC2_METADATA_DISABLED=true AWS_REGION=us-east-1
	"$1/versitygw" --access "$AWS_ACCESS_KEY_ID" --secret "$AWS_SECRET_ACCESS_KEY" --region us-east-1 \
		--port "127.0.0.1:$port" --health /health posix --sidecar "$1/sidecar" "$1/s3" >"$1/gw.log" 2>&1 &
	gwpid=$!
	endpoint=http://127.0.0.1:$port
	for tries in $(seq 1 100); do
		(: <"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
		kill -0 "$gwpid" 2>/dev/null || break
		sleep 0.1
	done
	echo "versitygw did not take connections on $endpoint:" >&2
	tail -20 "$1/gw.log" >&2
	return 1
}

# stop_versitygw stops the server start_versitygw started, if any. It is
# for exit traps: a server that died before is not there to kill, and
# under errexit a failed kill would end the trap before the work
# directory (on a GPU host, a 16 GiB raw file on tmpfs) is removed.
stop_versitygw() {
	[ -z "${gwpid:-}" ] || { kill "$gwpid" 2>/dev/null || true; wait "$gwpid" 2>/dev/null || true; }
	gwpid=
}
