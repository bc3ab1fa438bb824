// Package fakellm owns a fake LLM HTTP server for end-to-end tests and
// benchmarks that run the real gateway against a model over HTTP. It speaks
// the real OpenAI Chat Completions wire format (POST /v1/chat/completions)
// and the Anthropic Messages wire format (POST /v1/messages), streamed and
// not, lists one model at GET /v1/models, and answers every request from a
// [provider.Provider]: by default the deterministic scripted model, so tests
// steer agents with its directives (/reply, /tool, /then, /error, /stall, ...)
// through the gateway's real adapters.
//
// # Context window and summaries
//
// With [Options].ContextWindow set, a request whose prompt is larger (as
// [CountTokens] counts it: denser than Switchboard's own estimate) is
// refused with the API's own 400: OpenAI's context_length_exceeded body or
// Anthropic's "prompt is too long: N tokens > M maximum". Such a server
// reports its count as each reply's input usage. Compaction summariser
// requests (the reference's summariser system prompt) are answered by
// [Summary]: the requested sections with the latest unresolved request and
// the conversation's identifiers, far shorter than the conversation.
//
// It imports provider, provider/scripted, compaction and the standard library. Only
// tests and benchmark harnesses import it; production code paths never do.
//
// # Requests
//
// A request body is decoded into a [provider.Request] for the model:
//
//   - OpenAI: "system" and "developer" messages form Request.System (joined
//     with "\n"); "user", "assistant" and "tool" messages become messages of
//     those roles. Content is a string, null or an array of content parts
//     whose text parts are joined with "\n". Assistant tool_calls become
//     ToolCalls (empty arguments become {}); a tool message carries
//     tool_call_id, and its ToolName is the name of the earlier call with
//     that id. tools become ToolDefs; max_completion_tokens (else
//     max_tokens) is MaxTokens; reasoning_effort is Thinking.
//   - Anthropic: system is a string or text blocks (joined with "\n"). Each
//     text block of a user message becomes one user message and each
//     tool_result block one tool message (ToolCallID from tool_use_id,
//     ToolName from the matching earlier tool_use, IsError from is_error), in
//     block order. An assistant message becomes one assistant message: text
//     blocks joined with "\n", tool_use blocks as ToolCalls. max_tokens is
//     MaxTokens; an enabled thinking budget maps to Thinking "low" (up to
//     1024 tokens), "medium" (up to 4096) or "high".
//
// User messages that contain "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>", which
// the reference gateway appends after the history on every call, are left
// out of the model's view (but kept in [Recorded].Body) unless
// [Options].KeepInternalContext is set: the scripted model reads the last
// user message and would otherwise never see its trigger or a tool result.
//
// A body that is not valid JSON (or has a value of the wrong type for a
// field above), a message with an unknown role and a tool result without a
// call id are rejected with 400 before the model runs. Bodies are decoded
// with encoding/json into small structs (test code wants clarity over
// speed).
//
// # Streamed responses
//
// OpenAI streams are "data: <chat.completion.chunk>" lines: a first chunk
// with delta {"role":"assistant","content":""}, one chunk per text delta
// (delta.content) or thinking delta (delta.reasoning_content, as vLLM and
// DeepSeek send it), three chunks per tool call (delta.tool_calls with
// index, id, type "function", the name and empty arguments, then the
// arguments in two fragments), a chunk with an empty delta and the
// finish_reason ("stop", "tool_calls", "length"), a chunk with "choices":[]
// and the usage when stream_options.include_usage is true, then
// "data: [DONE]". The id is "chatcmpl-fake-<n>", where n counts the
// requests on the model endpoints from 1 (rejected ones included); created
// comes from [Options].Now; model echoes the request.
//
// Anthropic streams are named events: message_start (id "msg_fake_<n>",
// zero usage), then per run of text or thinking deltas one content block
// (content_block_start, text_delta or thinking_delta events,
// content_block_stop), per tool call one tool_use block whose input arrives
// as two input_json_delta fragments, then message_delta with the
// stop_reason ("end_turn", "tool_use", "max_tokens") and the full usage,
// and message_stop.
//
// Every content chunk is flushed as it is written, so a model's timing
// (its own delays, /sleep, /stall, [Options].Delay) reaches the client.
//
// # Errors
//
// A model error before the first content chunk is sent as the HTTP
// status of the [provider.Error] (400-599; anything else is 500) with the
// API's error body: {"error":{"message","type","code"}} for OpenAI,
// {"type":"error","error":{"type","message"}} for Anthropic, with the type
// the API uses for that status (OpenAI's also has "param":null). An error
// after content was streamed ends the stream with an in-stream error
// instead: a data line {"error":{"message","type","param","code":<status>}}
// and no [DONE] for OpenAI, an "error" event with the error body for
// Anthropic, whose adapter maps the error type back to a status.
package fakellm
