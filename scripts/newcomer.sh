#!/usr/bin/env bash
# Follows the README as a newcomer would, on a clean state dir, and fails
# on the first surprise. Run by cmd/switchboard's TestNewcomer (part of
# ./scripts/test.sh); by hand: scripts/newcomer.sh [path/to/switchboard]
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "newcomer: $*" >&2; exit 1; }
step() { echo "newcomer: $*"; }

# Get it.
bin=${1:-}
if [ -z "$bin" ]; then
  step "go build -o $work/bin/switchboard ./cmd/switchboard"
  go build -o "$work/bin/switchboard" ./cmd/switchboard
  bin=$work/bin/switchboard
fi
# Output is captured first: with pipefail, grep -q stopping early would
# fail the writer on a closed pipe.
"$bin" --version >"$work/version.out" && grep -q '^switchboard ' "$work/version.out" || fail "--version printed no version"

export HOME=$work/home SWITCHBOARD_STATE_DIR=$work/home/.switchboard
unset SWITCHBOARD_CONFIG SWITCHBOARD_URL SWITCHBOARD_GATEWAY_TOKEN OPENAI_API_KEY ANTHROPIC_API_KEY || true
mkdir -p "$HOME"

# Run it: doctor first, then serve on a port that is not the default.
"$bin" doctor >"$work/doctor.out" || { cat "$work/doctor.out"; fail "doctor failed on a clean state dir"; }
step "switchboard serve --port 0"
"$bin" serve --port 0 >"$work/serve.out" 2>"$work/serve.err" &
pids+=($!)
for _ in $(seq 1 100); do
  grep -q 'listening on' "$work/serve.out" 2>/dev/null && break
  sleep 0.1
done
grep -q 'listening on' "$work/serve.out" || { cat "$work/serve.err"; fail "serve did not start"; }

# One gateway per state dir.
if "$bin" serve --port 0 >"$work/second.out" 2>&1; then fail "a second serve on the same state dir started"; fi
grep -q "already running" "$work/second.out" || { cat "$work/second.out"; fail "the second serve did not say why"; }
grep -q "pid $!" "$work/second.out" || { cat "$work/second.out"; fail "the second serve did not name the first one's pid"; }

# Talk to it: the CLI finds the non-default port by itself.
"$bin" status >"$work/status.out" || { cat "$work/status.out"; fail "status could not reach the gateway on its own port"; }
out=$("$bin" sessions send main "hello newcomer" --wait)
[ "$out" = "echo: hello newcomer" ] || fail "sessions send --wait printed '$out'"
"$bin" sessions history main >"$work/history.out" && grep -q "hello newcomer" "$work/history.out" || fail "the message is not in the history"
if "$bin" sessions history agent:main:nosuch 2>"$work/nosuch.err"; then fail "history of a missing session exited 0"; fi
grep -q "no such session" "$work/nosuch.err" || fail "history of a missing session did not say so"
"$bin" doctor >"$work/doctor2.out" || { cat "$work/doctor2.out"; fail "doctor failed with the gateway running"; }

# A refused send exits non-zero with the reason.
"$bin" sessions patch main --send-policy deny >/dev/null
if "$bin" sessions send main "blocked" 2>"$work/refused.err"; then fail "a refused send exited 0"; fi
grep -q "send blocked by session policy" "$work/refused.err" || { cat "$work/refused.err"; fail "the refused send did not give the reason"; }

# Configure it wrong: doctor names the bad model reference and fails.
echo '{ agents: { defaults: { model: "nope/x" } } }' >"$SWITCHBOARD_STATE_DIR/switchboard.json5"
if "$bin" doctor >"$work/doctor3.out" 2>&1; then fail "doctor passed with a bad model reference"; fi
grep -q 'unknown model provider "nope"' "$work/doctor3.out" || { cat "$work/doctor3.out"; fail "doctor did not name the bad model"; }

step "ok"
