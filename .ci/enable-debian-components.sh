#!/usr/bin/env bash
# Enables the Debian archive components the CUDA toolkit needs: contrib
# (nvidia-support, a dependency of libcuda1) and non-free (the toolkit
# itself, with non-free-firmware beside it as Debian lists them). It edits
# the deb822 sources of a stock bookworm machine and is idempotent: a
# component already listed is not added twice, and a second run changes
# nothing. The README's GPU build instructions call it too.
set -euo pipefail

sources="${DEBIAN_SOURCES:-/etc/apt/sources.list.d/debian.sources}"
if [ ! -f "$sources" ]; then
	echo "debian components: $sources not found; enable contrib and non-free by hand" >&2
	exit 0
fi
for component in contrib non-free non-free-firmware; do
	# Only the Components: lines; each component is matched as a word.
	if grep -E '^Components:' "$sources" | grep -Evq "[[:space:]]$component([[:space:]]|\$)"; then
		sed -i -E "/^Components:/{/[[:space:]]$component([[:space:]]|\$)/!s/\$/ $component/}" "$sources"
		echo "debian components: enabled $component in $sources"
	fi
done
