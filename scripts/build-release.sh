#!/usr/bin/env bash
# Builds release binaries of switchboard: static (CGO_ENABLED=0), trimmed,
# stripped, with the version and commit stamped in.
#
#   scripts/build-release.sh                      # this machine's GOOS/GOARCH into dist/
#   scripts/build-release.sh all                  # linux, darwin, windows × amd64, arm64
#   scripts/build-release.sh linux/arm64 ...      # the named targets
#
# Env: VERSION (default: git describe, else 0.0.0-dev), COMMIT (default: git
# rev-parse HEAD), OUT (default: dist). Output: $OUT/switchboard_<os>_<arch>[.exe].
# .goreleaser.yaml builds the same way for tagged releases.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo 0.0.0-dev)}
VERSION=${VERSION#v}
COMMIT=${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
OUT=${OUT:-dist}
PKG=github.com/switchboardhq/switchboard/internal/cli
LDFLAGS="-s -w -X $PKG.Version=$VERSION -X $PKG.Commit=$COMMIT"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=("$(go env GOOS)/$(go env GOARCH)")
elif [ "${targets[0]}" = all ]; then
  targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64)
fi

mkdir -p "$OUT"
for t in "${targets[@]}"; do
  os=${t%/*} arch=${t#*/}
  ext=""; [ "$os" = windows ] && ext=.exe
  bin="$OUT/switchboard_${os}_${arch}${ext}"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=false -ldflags "$LDFLAGS" -o "$bin" ./cmd/switchboard
  echo "$bin"
done
