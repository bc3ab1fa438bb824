// Package scripted owns the deterministic offline model: a
// [provider.Provider] that needs no network and no API key. The daemon uses
// it as the default model ([Model]) when no provider or API key is
// configured, so a fresh offline gateway answers; tests use it to make agents
// reply and call tools exactly as scripted. It imports only provider,
// compaction (whose summariser prompts it answers) and the standard library;
// the daemon and tests import it.
//
// Every answer is a pure function of the request and the [Options]: the same
// request always yields the same events, tool call ids, usage and response
// id. The rules below are the complete behaviour of the model; the same text
// is in README.md.
//
// # Trigger message and steps
//
// Each call of Stream is one model step. The model reads the trigger
// message: the last message with role user in Request.Messages (empty text if
// there is none). The step number is 1 plus the number of assistant messages
// after the trigger, so the first call of an agent turn is step 1, the call
// that carries the first tool results is step 2, and so on. The System
// prompt is read only for /when rules. Model and Thinking only feed the
// response id: any model id is accepted, and /think works at every thinking
// level.
//
// # Plain text
//
// Without directives the model echoes: the reply is "echo: " followed by the
// trigger's plain text, which is the trigger without its directive lines,
// joined with "\n" and trimmed of surrounding whitespace. An empty plain text
// gives "echo: (empty)".
//
// # Directives
//
// A directive is a line of the trigger message that starts, after optional
// spaces and tabs, with "/" and one of the names below, followed by the end
// of the line or a space or tab. Names are case-sensitive. Every other line,
// including an unknown directive such as "/help me", is plain text and is
// echoed. The argument of a directive is the rest of its line after the name
// and one space or tab; a trailing "\r" is dropped. /reply, /then and /think
// keep their argument verbatim; the others ignore surrounding whitespace.
//
//	/reply <text>          reply exactly <text>
//	/think <text>          stream <text> as thinking before the reply
//	/tool <name> [<json>]  call tool <name> with the JSON object <json> ({} if absent)
//	/step                  start the script of the next step
//	/then <text>           reply <text> once tool results have come back
//	/sleep <duration>      wait before answering (Go syntax: 500ms, 2s, 1m)
//	/usage <in> <out> [<cache read> [<cache write>]]   report this token usage
//	/error [<status>] [<message>]                      fail the step
//	/stall                 block until the context is cancelled
//
// Through the gateway, a chat message whose first word is /think (or
// /model, /status, /compact…) is a chat command the gateway answers, not
// text for the model: put another line before a /think directive there.
//
// Several /reply, /think or /then lines are joined with "\n", in order, so
// multi-line text is written as one line per text line. A /reply with no
// argument gives an empty reply: no text deltas at all.
//
// /step lines split the directives into per-step scripts: the lines before
// the first /step are the script of step 1, the lines after it the script of
// step 2, and so on. A step past the last script has an empty script. /then
// is not tied to a step. Several /tool lines in one script are several tool
// calls in one step. /step and /stall ignore any argument. Example, a turn
// of three steps:
//
//	/tool sessions_list {"limit": 5}
//	/step
//	/tool sessions_history {"sessionKey": "main"}
//	/then done
//
// # What a step does
//
//  1. Wait for the sum of the script's /sleep durations, capped at
//     [MaxSleep].
//  2. Stream the /think text as thinking deltas.
//  3. Stream the reply as text deltas. The reply is the /reply text if the
//     script has /reply lines. Otherwise a script with /tool, /error or
//     /stall lines has no reply. Otherwise the default reply is used: when
//     the last message of the request is a tool result, the /then text if
//     the trigger has /then lines, else one summary line per tool result at
//     the end of the request, "tool <name> returned: <excerpt>" ("failed"
//     instead of "returned" for error results), where the excerpt is the
//     result text with whitespace runs collapsed to one space, trimmed, cut to
//     200 characters (runes) followed by "…" when longer, or "(empty)"; in
//     every other case the echo.
//  4. Emit one tool call event per /tool line, in order, unless the script
//     has /error or /stall. The model calls
//     tools that are not in Request.Tools too: the runner decides what to do
//     with unknown tools. Tool call ids are "call_<n>", where n counts from 1
//     plus the number of tool calls in the assistant messages of the request,
//     so ids are unique within a conversation and reproducible.
//  5. If the script has /stall, block until the context is done, then end
//     with ctx.Err(). Else, if it has /error, end with a *[provider.Error]:
//     Provider is [Options].Name, StatusCode is <status> (100-599, default
//     500), Message is <message> (default "injected error"), and Retryable
//     is set for 429, 502, 503 and 504 only, so a plain /error fails fast
//     under a retrying runner. Neither emits usage or done; thinking and
//     /reply text streamed before them let tests produce a partial answer
//     that fails or is aborted mid-stream.
//  6. Emit one usage event: by default Input is the byte length of the
//     System prompt, every message text and every tool call name and
//     arguments in the request, divided by 4, and Output the byte length of
//     the thinking, reply and tool call names and arguments of this step,
//     divided by 4; both are at least 1. The last /usage line of the script
//     replaces them (cache fields default to 0).
//  7. Emit done. StopReason is "toolUse" if the step called tools, "length"
//     if the reply was cut by MaxTokens, else "stop". ResponseID is
//     "<Name>-<16 hex digits>", a hash of the whole request but Sampling
//     (images included). A Provider remembers, in a small bounded memo,
//     the digests of the messages, system prompt and tools of its recent
//     requests, so that a turn whose history window repeats the last
//     one's, slid by a few messages, hashes only the messages it adds;
//     the id does not depend on what the memo holds.
//
// When Request.MaxTokens is positive and the reply is longer than
// 4×MaxTokens bytes, it is cut to that length (at a character boundary), the
// step's tool calls are dropped and StopReason is "length".
//
// Text and thinking are streamed as word-sized deltas: each delta is a word
// followed by the ASCII whitespace after it (leading whitespace goes with the
// first word). The deltas concatenate to exactly the reply.
//
// # Rules in the System prompt
//
// When the trigger message has no directives, the model consults the /when
// rules of Request.System, lines of the form
//
//	/when "<string>" <directive line>
//
// where <string> is a Go quoted string ("..." with backslash escapes, or
// `...`). Every rule whose string occurs in the trigger text contributes its
// directive line, in System order, as if it were written in the trigger. The
// empty string matches every message. Other System lines are ignored. Rules
// let an agent's configuration script answers to messages it does not
// author, such as the agent-to-agent steps:
//
//	/when "announce step" /reply ANNOUNCE_SKIP
//	/when "pong" /reply REPLY_SKIP
//
// # Compaction summaries
//
// A request whose System prompt is the compaction summariser's
// (compaction.SystemPrompt) is not read for directives: the reply is a
// summary of the conversation in the prompt, in the format the prompt asks
// for. In safeguard format it has every required section (## Decisions, ##
// Open TODOs, ## Constraints/Rules, ## Pending user asks with the latest
// unresolved request first, ## Exact identifiers); in default format the
// reference's checkpoint sections. It counts what it summarised and lists up
// to 12 identifiers of the conversation verbatim, so automatic and manual
// compaction work offline and pass the safeguard quality audit.
//
// # Errors
//
// A malformed directive fails the step before any event with a
// *[provider.Error] of StatusCode 400 (not retryable) whose message names the
// line, e.g. "line 2: /tool: arguments are not a JSON object". Malformed are:
// /tool without a name or with arguments that are not a JSON object; /sleep
// without a valid, non-negative duration; /usage without two to four
// non-negative integers; /error with a numeric status outside 100-599; a
// /when rule without a quoted string followed by a directive ("system line
// N: ..."). All lines are checked, not only those of the current step.
//
// # Timing and cancellation
//
// [Options].Delay is waited before every text delta, thinking delta and tool
// call event. If the context is done when Stream starts, or while the model
// waits (/sleep, /stall, Delay), the sequence ends at once with ctx.Err().
// Breaking out of the range stops the step; nothing runs after it. Without
// /sleep, /stall and Delay a step takes a few microseconds.
package scripted
