#!/usr/bin/env bash
# Builds what bench/path-host.sh needs on a GPU host that has no Go and no
# network, into .dev/ (ignore it in .git/info/exclude): zspool with the GPU
# engine, bench/s3upload, and versitygw from .ci/install-s3-servers.sh's
# cache, stripped; each also xz-compressed, since a device call carries at
# most 64 MiB. Unpack there with: for f in .dev/*.xz; do xz -dk "$f"; done
# (path-host.sh takes versitygw.xz as it is).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tools="${ZSPOOL_TOOLS:-$HOME/.cache/zspool}"
gw="$tools/versitygw-v1.8.0/versitygw"
[ -x "$gw" ] || "$here/.ci/install-s3-servers.sh"
mkdir -p "$here/.dev"
cd "$here"
CGO_LDFLAGS="${CGO_LDFLAGS:--L/usr/lib/x86_64-linux-gnu/stubs}" go build -tags cuda -ldflags="-s -w" -o .dev/zspool ./cmd/zspool
go build -ldflags="-s -w" -o .dev/s3upload ./bench/s3upload
strip -o .dev/versitygw "$gw"
for f in zspool s3upload versitygw; do xz -T0 -3 -f -k ".dev/$f"; done
rm .dev/versitygw
ls -la .dev/*.xz
