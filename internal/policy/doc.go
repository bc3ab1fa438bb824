// Package policy owns Switchboard's pure access decisions for the session
// tools, with the exact semantics of the reference gateway (OpenClaw
// v2026.3.8; docs/spec/reference-behaviour.md §3, §6.1, §7, §8, §9.3, §9.4, §11):
//
//   - the send policy (session.sendPolicy, the per-session override, the
//     owner-only "/send" command and the sessions.patch sendPolicy value);
//   - session visibility (tools.sessions.visibility, the sandbox clamp,
//     "restrictToSpawned") and the visibility guard with its exact
//     forbidden messages;
//   - agent-to-agent allow lists (tools.agentToAgent), including the
//     label-path checks of sessions_send;
//   - sessions_spawn limits (depth, active children, allowAgents, sandbox)
//     and the agents_list allowed set;
//   - the tool policy of sub-agent sessions.
//
// Every function is a pure decision: no I/O, no clock, no state, no logging.
// Every fact a decision needs (config values, session entries, spawned-child
// membership, counts, depths) comes in as an argument or a func, so callers
// that own the I/O (tools/sessions, gateway, agent, channel, daemon) convert
// their own types and pass them in. All functions are safe for concurrent
// use; the funcs a caller passes must be too if the caller shares them.
//
// It is a leaf: it imports only the standard library and
// internal/sessionkey, and never its users, so any package may import it.
//
// Denials come back as *Denial (nil means allowed) or, for the visibility
// guard, as (allowed, status, message), whose strings are the reference's
// literal tool-result "status" and "error" values; clients match on them.
package policy
