#!/usr/bin/env bash
# Builds one pinned command from a tools module under operator/tools/ into bin/, once per version.
# Usage: scripts/build-tool.sh <tools-module> <package> <output-name> [extra go build args...]
# The output is bin/<output-name>; a stamp beside it records the module's go.sum hash, so a change of
# pinned version rebuilds and an unchanged one costs nothing. Go's build cache makes rebuilds cheap too.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
module=$1 pkg=$2 name=$3; shift 3
moddir="$root/operator/tools/$module"
out="$root/bin/$name"
stamp="$root/bin/.$name.stamp"
want=$(cat "$moddir/go.mod" "$moddir/go.sum" "$0" | sha256sum | cut -c1-16)
if [[ -x "$out" && -f "$stamp" && "$(cat "$stamp")" == "$want"* ]]; then
  exit 0
fi
mkdir -p "$root/bin"
echo "building $name from operator/tools/$module ($pkg)" >&2
start=$SECONDS
(cd "$moddir" && CGO_ENABLED=0 go build -trimpath -o "$out.tmp" "$@" "$pkg")
mv "$out.tmp" "$out"
echo "$want $(date -u +%FT%TZ)" > "$stamp"
echo "built $name in $((SECONDS - start))s" >&2
