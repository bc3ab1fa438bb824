// Package sanitize owns the text hygiene of the session tools, with the exact
// semantics of the reference gateway (OpenClaw v2026.3.8;
// docs/spec/reference-behaviour.md §5, §6.6, §14.2):
//
//   - secret redaction: [Redactor], built from the reference's
//     logging.redactSensitive / logging.redactPatterns settings, with the
//     default secret patterns and masking rules;
//   - sessions_history sanitising and capping: [SanitizeHistory] drops tool
//     messages, strips heavy fields, redacts and truncates text, omits image
//     data and caps the result at 80 KiB of JSON, measured as the reference
//     measures it ([JSONSize]);
//   - reply text extraction: [AssistantText], [LatestReply] and
//     [LastMessageReply] (MiniMax tool-call XML, downgraded tool-call text and
//     reasoning tags stripped, provider errors rewritten for users), and the
//     skip tokens of the agent-to-agent flow ([IsSkip]).
//
// Everything here is a pure function of its arguments: no I/O, no clock, no
// logging, no global mutable state. A [Redactor] is immutable once built and
// safe for concurrent use. Messages are the generic JSON form of transcript
// messages (map[string]any as decoded by encoding/json); inputs are never
// modified.
//
// It is a leaf: it imports only the standard library (and may import
// internal/transcript), never its users, so any package may import it —
// typically tools/sessions (sessions_history, sessions_send), subagent
// (announce replies) and gateway.
//
// # JavaScript string semantics
//
// The reference runs on JavaScript strings, so lengths and limits here count
// UTF-16 code units (an emoji counts 2), "whitespace" is JavaScript's \s (it
// includes U+FEFF and U+00A0 but not U+0085), and the case-insensitive
// reference patterns fold ASCII letters only (the Kelvin sign does not match
// "k"). Go strings that are not valid UTF-8 are treated as if every invalid
// byte were U+FFFD.
package sanitize
