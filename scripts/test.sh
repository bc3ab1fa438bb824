#!/usr/bin/env bash
# Runs the whole Switchboard test suite, doing its own set-up first.
# Usage: scripts/test.sh [extra go test flags]
set -euo pipefail
cd "$(dirname "$0")/.."

# phase says what the script does next, with the time since it started.
phase() { printf '==> [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

phase "build the switchboard binary and the test summariser"
# Build the binary once; subprocess tests (crash/restart) use it.
export SWITCHBOARD_TEST_BIN="${SWITCHBOARD_TEST_BIN:-$PWD/.cache/bin/switchboard}"
mkdir -p "$(dirname "$SWITCHBOARD_TEST_BIN")"
go build -o "$SWITCHBOARD_TEST_BIN" ./cmd/switchboard
SUMMARY_BIN="$(dirname "$SWITCHBOARD_TEST_BIN")/testsummary"
go build -o "$SUMMARY_BIN" ./scripts/testsummary

phase "set up the pinned npm clients and the system packages the tests use"
# Pinned npm packages for internal/interop's conformance tests, cached in
# .cache/npm (or $SWITCHBOARD_NPM_CACHE). SWITCHBOARD_SKIP_NPM=1 skips this for
# offline local runs (those tests then skip); it is ignored under CI=true.
if [ "${SWITCHBOARD_SKIP_NPM:-}" = 1 ] && [ "${CI:-}" != true ]; then
  echo "test.sh: SWITCHBOARD_SKIP_NPM=1, not running scripts/npm-setup.sh" >&2
else
  if [ "${SWITCHBOARD_SKIP_NPM:-}" = 1 ]; then echo "test.sh: CI=true, ignoring SWITCHBOARD_SKIP_NPM=1" >&2; fi
  ./scripts/npm-setup.sh
fi

# PostgreSQL binaries for internal/store/postgres's throwaway clusters:
# installed with apt-get on Debian when running as root; otherwise those
# tests skip (and fail under CI=true).
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1 \
  && [ -z "${SWITCHBOARD_TEST_PG_URL:-}" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql
  else
    echo "test.sh: PostgreSQL binaries missing (apt-get install postgresql); its tests will skip" >&2
  fi
fi

# Chromium for internal/webui/browsertest: installed with apt-get on Debian
# when running as root; otherwise that test skips (and fails under CI=true).
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1 \
  && [ -z "${SWITCHBOARD_CHROMIUM:-}" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
  else
    echo "test.sh: chromium missing (apt-get install chromium); the browser tests will skip" >&2
  fi
fi

# bubblewrap for the sandbox backend's tests (internal/sandbox/...):
# installed with apt-get when running as root; otherwise they skip (and
# fail under CI=true).
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap
  else
    echo "test.sh: bwrap missing (apt-get install bubblewrap); the sandbox tests will skip" >&2
  fi
fi

# ngircd for the IRC connector's tests (internal/channel/irc/irctest):
# installed with apt-get when running as root; otherwise they skip (and
# fail under CI=true).
if ! command -v ngircd >/dev/null 2>&1 && [ ! -x /usr/sbin/ngircd ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ngircd
  else
    echo "test.sh: ngircd missing (apt-get install ngircd); the IRC tests will skip" >&2
  fi
fi

phase "staticcheck, in the background beside the tests"
# staticcheck (pinned) checks the whole module while the tests run; its
# findings fail the run at the end. Directory staticcheck.conf files say
# which checks are off where, and why.
STATICCHECK_BIN="$(dirname "$SWITCHBOARD_TEST_BIN")/staticcheck"
GOBIN="$(cd "$(dirname "$STATICCHECK_BIN")" && pwd)" go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
STATICCHECK_OUT="$(mktemp)"
"$STATICCHECK_BIN" ./... >"$STATICCHECK_OUT" 2>&1 &
staticcheck_pid=$!

phase "go test (compiling takes a while before the first package reports)"
# go test -json through the summariser: go test's own "ok"/"FAIL" lines
# and failed tests' output as they come, a line per package group, then a
# summary (packages passed/failed, the slowest ten, the total time). With
# pipefail the pipeline fails when go test or the summariser does.
test_rc=0
go test -json -race -shuffle=on -count=1 -timeout 20m "$@" ./... | "$SUMMARY_BIN" || test_rc=$?

phase "staticcheck's findings"
staticcheck_rc=0
wait "$staticcheck_pid" || staticcheck_rc=$?
cat "$STATICCHECK_OUT"
rm -f "$STATICCHECK_OUT"
if [ "$staticcheck_rc" -ne 0 ]; then
  echo "test.sh: staticcheck failed (exit $staticcheck_rc)" >&2
else
  echo "staticcheck: no findings"
fi
phase "done"
if [ "$test_rc" -ne 0 ]; then exit "$test_rc"; fi
exit "$staticcheck_rc"
