#!/usr/bin/env bash
# Runs the whole Switchboard test suite, doing its own set-up first.
# Usage: scripts/test.sh [extra go test flags]
set -euo pipefail
cd "$(dirname "$0")/.."

# Build the binary once; subprocess tests (crash/restart) use it.
export SWITCHBOARD_TEST_BIN="${SWITCHBOARD_TEST_BIN:-$PWD/.cache/bin/switchboard}"
mkdir -p "$(dirname "$SWITCHBOARD_TEST_BIN")"
go build -o "$SWITCHBOARD_TEST_BIN" ./cmd/switchboard

go test -race -shuffle=on -count=1 -timeout 20m "$@" ./...
