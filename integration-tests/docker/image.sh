#!/usr/bin/env bash
# Builds the simulator's container image from local files only (no image registry is needed):
# the mongo-sim binary and the shared libraries it loads (as ldd lists them) are packed into a
# root filesystem and imported. Works with docker and with podman.
#
#   integration-tests/docker/image.sh [BINARY] [TAG]
#
# BINARY defaults to target/debug/mongo-sim (built if missing), TAG to mongo-actors/mongo-sim:local.
# ENGINE=docker|podman picks the engine (default: docker if present, else podman).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-${CARGO_TARGET_DIR:-target}/debug/mongo-sim}
TAG=${2:-mongo-actors/mongo-sim:local}
ENGINE=${ENGINE:-$(command -v docker >/dev/null 2>&1 && echo docker || echo podman)}
if [ ! -x "$BIN" ]; then
  ${CARGO:-cargo} build -q -p mongo-sim
fi
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/data" "$root/tmp"
cp "$BIN" "$root/bin/mongo-sim"
# Each library at the path the dynamic loader looks for it (the loader itself included).
ldd "$BIN" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | while read -r lib; do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
tar -C "$root" -c . | "$ENGINE" import \
  --change 'ENTRYPOINT ["/bin/mongo-sim"]' \
  --change 'WORKDIR /data' \
  --change 'LABEL org.mongo-actors.image=mongo-sim' \
  - "$TAG" >/dev/null
echo "image.sh: $TAG ($ENGINE, $(du -sh "$root" | cut -f1) from $BIN)"
