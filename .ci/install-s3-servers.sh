#!/usr/bin/env bash
# Builds the pinned S3-compatible servers that internal/s3test starts for
# tests, into ${ZSPOOL_TOOLS:-$HOME/.cache/zspool}/<name>-<version>/<binary>.
#
# Idempotent: a server whose binary is already in place is left alone, so a
# cached run takes well under a second. Each binary is built into a temporary
# directory next to its final place and renamed into it, so an interrupted
# build never leaves a partial binary where the tests look for one.
set -euo pipefail

tools="${ZSPOOL_TOOLS:-$HOME/.cache/zspool}"

# name version binary module (versions pinned exactly; keep in sync with
# internal/s3test/s3test.go).
servers=(
	"minio v0.0.0-20260212201848-7aac2a2c5b7c minio github.com/minio/minio"
	"versitygw v1.8.0 versitygw github.com/versity/versitygw/cmd/versitygw"
)

tmp=""
cleanup() { if [ -n "$tmp" ]; then rm -rf "$tmp"; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM # run the EXIT trap on interruption too

mkdir -p "$tools"
for entry in "${servers[@]}"; do
	read -r name version binary module <<<"$entry"
	dir="$tools/$name-$version"
	dest="$dir/$binary"
	if [ -x "$dest" ]; then
		echo "s3 servers: $name $version already installed at $dest"
		continue
	fi
	echo "s3 servers: building $name $version ($module@$version) ..."
	mkdir -p "$dir"
	# Same filesystem as $dest, so the final mv is an atomic rename.
	tmp="$(mktemp -d "$tools/.build-$name-XXXXXX")"
	start=$SECONDS
	# Run outside any module so the caller's go.mod cannot influence the
	# pinned build (go install pkg@version ignores it anyway; belt and braces).
	(cd "$tmp" && GOBIN="$tmp/bin" go install "$module@$version")
	mv -f "$tmp/bin/$binary" "$dest"
	rm -rf "$tmp"
	tmp=""
	echo "s3 servers: installed $name $version at $dest in $((SECONDS - start))s"
done
