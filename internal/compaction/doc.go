// Package compaction owns the pure rules of context management for long
// sessions: the model's context window and the reserve kept free below it
// (with the reference's 4,000/8,000-token guard), token estimates calibrated
// by what providers report, recognition of context-overflow errors, the cut
// point between summarised history and the tail kept verbatim (tool calls
// stay paired with their results), the summariser prompts of the "default"
// and "safeguard" modes with the safeguard quality audit, the compaction
// transcript entry, and the argument parsers of the /compact, /new and
// /reset chat commands.
//
// It does no I/O and reads no clock. It imports only the provider and
// transcript leaves; the agent runner and the gateway import it.
package compaction
