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
grep -q "scripted/echo-1 resolves$" "$work/doctor.out" || { cat "$work/doctor.out"; fail "doctor's models line does not read as a sentence"; }
# dashboard before serve: the link would not load; it says to start serve.
"$bin" dashboard --no-open >/dev/null 2>"$work/dash.err" || fail "dashboard failed before serve"
grep -q "no gateway is running.*switchboard serve" "$work/dash.err" || { cat "$work/dash.err"; fail "dashboard before serve did not say to start serve"; }
step "switchboard serve --port 0"
"$bin" serve --port 0 >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
pids+=($serve_pid)
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
"$bin" sessions list >"$work/list.out" && grep -q "agent:main:main" "$work/list.out" || fail "sessions list does not show the main session"
"$bin" call health >"$work/health.out" || fail "call health failed"
"$bin" sessions history main >"$work/history.out" && grep -q "hello newcomer" "$work/history.out" || fail "the message is not in the history"
if "$bin" sessions history agent:main:nosuch 2>"$work/nosuch.err"; then fail "history of a missing session exited 0"; fi
grep -q "no such session" "$work/nosuch.err" || fail "history of a missing session did not say so"
"$bin" doctor >"$work/doctor2.out" || { cat "$work/doctor2.out"; fail "doctor failed with the gateway running"; }

grep -q "gateway serves 127.0.0.1:" "$work/doctor2.out" || { cat "$work/doctor2.out"; fail "doctor did not check the port the gateway serves"; }

# A typo in a subcommand fails with a suggestion.
if "$bin" sessions lst 2>"$work/lst.err" >/dev/null; then fail "sessions lst exited 0"; fi
grep -q "Did you mean this?" "$work/lst.err" && grep -q "list" "$work/lst.err" || { cat "$work/lst.err"; fail "sessions lst did not suggest list"; }
if "$bin" cron remove x 2>"$work/rm.err" >/dev/null; then fail "cron remove exited 0"; fi
grep -q "rm" "$work/rm.err" || { cat "$work/rm.err"; fail "cron remove did not suggest rm"; }

# Cron: add, run and runs print tables like list (JSON with --json).
"$bin" cron add --name hourly --message "tick" --every 1h >"$work/cron-add.out"
head -1 "$work/cron-add.out" | grep -q '^ID ' || { cat "$work/cron-add.out"; fail "cron add printed no table"; }
job=$(sed -n 2p "$work/cron-add.out" | awk '{print $1}')
"$bin" cron run "$job" >"$work/cron-run.out"
head -1 "$work/cron-run.out" | grep -q '^RAN ' || { cat "$work/cron-run.out"; fail "cron run printed no table"; }
"$bin" cron runs "$job" >"$work/cron-runs.out"
head -1 "$work/cron-runs.out" | grep -Eq '^(RUN ID|No runs)' || { cat "$work/cron-runs.out"; fail "cron runs printed no table"; }
"$bin" cron list >"$work/cron-list.out" && grep -q "hourly" "$work/cron-list.out" || fail "cron list does not show the job"
"$bin" --json cron runs "$job" >"$work/cron-runs.json"
grep -q '"entries"' "$work/cron-runs.json" || fail "cron runs --json printed no JSON"

# /reset with a message: --wait prints the reply to that message.
out=$("$bin" sessions send main "/reset hello again" --wait)
[ "$out" = "echo: hello again" ] || fail "/reset hello again --wait printed '$out'"

# An agent that was never configured is unknown.
if "$bin" sessions send agent:ghost:main "hi" 2>"$work/ghost.err"; then fail "a send to an unconfigured agent exited 0"; fi
grep -q "unknown agent id: ghost" "$work/ghost.err" || { cat "$work/ghost.err"; fail "the unconfigured agent was not reported as unknown"; }

# service install keeps the port this gateway serves on.
mkdir -p "$work/fakebin"
printf '#!/bin/sh\nexit 0\n' >"$work/fakebin/systemctl"
chmod +x "$work/fakebin/systemctl"
port=$(sed -n 's/.*listening on http:\/\/[^ ]*:\([0-9]*\).*/\1/p' "$work/serve.out" | head -1)
PATH=$work/fakebin:$PATH SWITCHBOARD_SERVICE_MANAGER=systemd "$bin" service install --no-start >"$work/service.out"
PATH=$work/fakebin:$PATH SWITCHBOARD_SERVICE_MANAGER=systemd "$bin" service status >"$work/service-status.out" || true
grep -q "installed" "$work/service-status.out" || { cat "$work/service-status.out"; fail "service status does not say it is installed"; }
grep -q -- "\"--port\" \"$port\"" "$HOME/.config/systemd/user/switchboard.service" \
  || { cat "$HOME/.config/systemd/user/switchboard.service"; fail "service install did not keep port $port"; }
# The service does not inherit this shell: the key it uses goes into
# service.env (0600), which the unit reads; the unit holds no secret.
OPENAI_API_KEY=sk-newcomer PATH=$work/fakebin:$PATH SWITCHBOARD_SERVICE_MANAGER=systemd "$bin" service install --no-start >"$work/service-env.out"
grep -q 'OPENAI_API_KEY="sk-newcomer"' "$SWITCHBOARD_STATE_DIR/service.env" \
  && grep -q "EnvironmentFile=-$SWITCHBOARD_STATE_DIR/service.env" "$HOME/.config/systemd/user/switchboard.service" \
  && ! grep -q sk-newcomer "$HOME/.config/systemd/user/switchboard.service" \
  || { cat "$work/service-env.out"; fail "service install did not carry OPENAI_API_KEY to the service"; }
[ "$(stat -c %a "$SWITCHBOARD_STATE_DIR/service.env")" = 600 ] || fail "service.env is not 0600"
rm "$SWITCHBOARD_STATE_DIR/service.env"
# Installing beside the gateway started by hand does not start the service
# (it would crash-loop on the held state dir) and says what to do.
if PATH=$work/fakebin:$PATH SWITCHBOARD_SERVICE_MANAGER=systemd "$bin" service install >/dev/null 2>"$work/service-fg.err"; then
  fail "service install started the service beside the gateway started by hand"
fi
grep -q "started by hand" "$work/service-fg.err" && grep -q "systemctl --user enable --now" "$work/service-fg.err" \
  || { cat "$work/service-fg.err"; fail "service install beside a running gateway did not say what to do"; }
# No systemd user session (a container): systemctl's error gets the fix.
mkdir -p "$work/nobus"
printf '#!/bin/sh\necho "Failed to connect to bus: No medium found" >&2\nexit 1\n' >"$work/nobus/systemctl"
chmod +x "$work/nobus/systemctl"
if PATH=$work/nobus:$PATH SWITCHBOARD_SERVICE_MANAGER=systemd "$bin" service status >/dev/null 2>"$work/nobus.err"; then fail "service status without a user session exited 0"; fi
grep -q "loginctl enable-linger" "$work/nobus.err" || { cat "$work/nobus.err"; fail "no user session: the error does not say what to do"; }

# A run under way when the gateway gets SIGTERM finishes within the grace,
# and the client waiting on it gets the reply; the gateway exits 0.
"$bin" sessions send main $'/sleep 3s\n/reply finished in the grace' --wait >"$work/drain.out" 2>"$work/drain.err" &
waiter=$!
for _ in $(seq 1 100); do
  "$bin" --json call runs.active >"$work/active.json" 2>/dev/null && grep -q '"status": *"running"' "$work/active.json" && break
  sleep 0.1
done
kill -TERM "$serve_pid"
wait "$waiter" || { cat "$work/drain.err"; fail "the client waiting on a run lost it when the gateway drained"; }
grep -q "finished in the grace" "$work/drain.out" || fail "the drained run's reply did not reach the client: $(cat "$work/drain.out")"
wait "$serve_pid" || fail "the gateway did not exit 0 after SIGTERM"
grep -q "shutdown: draining.*runs=1" "$work/serve.err" && grep -q "shutdown: drained.*cutShort=false" "$work/serve.err" \
  || { tail -5 "$work/serve.err"; fail "the drain was not logged"; }
# With the gateway stopped, logs reads its log file.
"$bin" logs >"$work/logs-down.out" 2>"$work/logs-down.err" || { cat "$work/logs-down.err"; fail "logs failed with the gateway stopped"; }
grep -q "shutdown: drained" "$work/logs-down.out" && grep -q "no gateway is running" "$work/logs-down.err" \
  || { cat "$work/logs-down.err"; tail -3 "$work/logs-down.out"; fail "logs did not read the stopped gateway's log file"; }
"$bin" serve --port 0 >"$work/serve.out" 2>"$work/serve.err" &
pids+=($!)
for _ in $(seq 1 100); do
  grep -q 'listening on' "$work/serve.out" 2>/dev/null && break
  sleep 0.1
done
grep -q 'listening on' "$work/serve.out" || { cat "$work/serve.err"; fail "serve did not start again"; }

# A refused send exits non-zero with the reason.
"$bin" sessions patch main --send-policy deny >/dev/null
if "$bin" sessions send main "blocked" 2>"$work/refused.err"; then fail "a refused send exited 0"; fi
grep -q "send blocked by session policy" "$work/refused.err" || { cat "$work/refused.err"; fail "the refused send did not give the reason"; }

# Configure the basics: the README's custom provider applies while the
# gateway runs (here on a port where nothing listens), and a run against a
# server that is not there says what to check.
awk '/^A custom OpenAI-compatible server/{f=1} f&&/^```json5/{p=1;next} p&&/^```/{exit} p' README.md \
  | sed 's#127.0.0.1:11434#127.0.0.1:1#' >"$SWITCHBOARD_STATE_DIR/switchboard.json5"
grep -q 'local/llama3.1' "$SWITCHBOARD_STATE_DIR/switchboard.json5" || fail "the README's provider example was not found"
for _ in $(seq 1 100); do
  grep -q 'model local/llama3.1' "$work/serve.out" 2>/dev/null && break
  sleep 0.1
done
grep -q 'model local/llama3.1' "$work/serve.out" || { tail -5 "$work/serve.err"; fail "the README's provider config was not applied"; }
if "$bin" sessions send agent:main:local "hi" --wait >/dev/null 2>"$work/local.err"; then fail "a run against a closed port exited 0"; fi
grep -q "is the server running, and is models.providers.local.baseUrl right?" "$work/local.err" \
  || { cat "$work/local.err"; fail "an unreachable provider did not say what to check"; }

# A config with several errors: each under doctor's config check.
printf '{\n  gateway: { port: "abc",\n    bind: 5 },\n}\n' >"$SWITCHBOARD_STATE_DIR/switchboard.json5"
if "$bin" doctor >"$work/doctor-errs.out" 2>&1; then fail "doctor passed with an invalid config"; fi
grep -q '^  *[^ ].*switchboard.json5:3: gateway.bind' "$work/doctor-errs.out" \
  || { cat "$work/doctor-errs.out"; fail "doctor's second config error is not under its check"; }

# Configure it wrong: doctor names the bad model reference and fails.
echo '{ agents: { defaults: { model: "nope/x" } } }' >"$SWITCHBOARD_STATE_DIR/switchboard.json5"
if "$bin" doctor >"$work/doctor3.out" 2>&1; then fail "doctor passed with a bad model reference"; fi
grep -q 'unknown model provider "nope"' "$work/doctor3.out" || { cat "$work/doctor3.out"; fail "doctor did not name the bad model"; }
! grep -q 'unknown model$' "$work/doctor3.out" || { cat "$work/doctor3.out"; fail "doctor's bad-model line ends in the sentinel, not the fix"; }
# A model with no key: the run fails with the cause and the fix, as the README shows it.
echo '{ agents: { defaults: { model: { primary: "openai/gpt-4.1-mini" } } } }' >"$SWITCHBOARD_STATE_DIR/switchboard.json5"
for _ in $(seq 1 100); do
  grep -q 'model openai/gpt-4.1-mini' "$work/serve.out" 2>/dev/null && break
  sleep 0.1
done
grep -q 'model openai/gpt-4.1-mini' "$work/serve.out" || { tail -5 "$work/serve.err"; fail "the openai config was not applied"; }
if "$bin" sessions send agent:main:nokey "hi" --wait >/dev/null 2>"$work/nokey.err"; then fail "a run with no API key exited 0"; fi
grep -q 'no API key for provider openai: set OPENAI_API_KEY or models.providers.openai.apiKey$' "$work/nokey.err" \
  || { cat "$work/nokey.err"; fail "the run with no API key did not end with the fix"; }

step "ok"
