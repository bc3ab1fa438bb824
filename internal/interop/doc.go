// Package interop owns Switchboard's cross-implementation conformance tests: checks
// that what Switchboard puts on the wire matches the OpenClaw reference, using the
// reference's own artifacts from npm.
//
//   - [Schema] validates frames, request params, response payloads and event payloads
//     against protocol.schema.json from @openclaw/gateway-protocol.
//   - [RunNodeClient] drives a gateway with the third-party client openclaw-node
//     (testdata/openclaw_node_client.mjs) and returns what it saw.
//   - [MCPClient] drives an MCP server with the reference client @modelcontextprotocol/sdk
//     (testdata/mcp_sdk_client.mjs); [MCPServerCommand] starts the reference servers
//     server-everything and server-filesystem.
//   - [NewOpenClawGateway] runs the reference gateway itself, channels on and its
//     model an offline fake, as a peer (its A2A channel) of a Switchboard gateway.
//
// The npm packages are installed by scripts/npm-setup.sh into $SWITCHBOARD_NPM_CACHE
// (default <repo>/.cache/npm); nothing here touches the network. When the cache is
// missing, helpers taking a testing.TB skip the test, except under CI=true where they
// fail it.
//
// Test-only: import this package from _test.go files only (it imports testing). It
// imports nothing from Switchboard, so any package's tests may use it.
package interop
