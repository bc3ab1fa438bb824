package agent

import (
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// storedInput returns the input a run opened at once executes: in as
// Enqueue stored it (raw is its JSON), which a queued run reads back. When
// the JSON round trip would give in back unchanged — its fields are plain
// strings, numbers and flags, strings valid UTF-8, no images, sampling,
// client tools or compaction — it is a copy of in (decoding raw was 1.7%
// of the gateway's CPU per warm turn); otherwise raw is decoded.
func storedInput(in *Input, raw []byte) (Input, error) {
	if !plainInput(in) {
		var run Input
		err := json.Unmarshal(raw, &run)
		return run, err
	}
	run := *in
	run.Session = nil // not stored
	if p := in.Provenance; p != nil {
		cp := *p
		run.Provenance = &cp
	}
	if c := in.Chain; c != nil {
		cp := *c
		cp.Path = nil
		if len(c.Path) > 0 { // an empty path is not stored
			cp.Path = slices.Clone(c.Path)
		}
		run.Chain = &cp
	}
	return run, nil
}

// plainInput reports whether in survives its JSON round trip unchanged
// (up to Session, which is not stored, and an empty chain path).
func plainInput(in *Input) bool {
	if in.Images != nil || in.Sampling != nil || in.ClientTools != nil || in.Compact != nil || in.Carries != nil {
		return false
	}
	if p := in.Provenance; p != nil && (p.SourceSessionKeys != nil ||
		!validUTF8(p.Kind, p.SourceSessionKey, p.SourceChannel, p.SourceTool)) {
		return false
	}
	if c := in.Chain; c != nil && (!validUTF8(c.ID, c.Span, c.Untrusted) || !validUTF8(c.Path...)) {
		return false
	}
	return validUTF8(in.RunID, in.SessionKey, in.AgentID, in.Message, in.Lane, in.IdempotencyKey,
		in.ExtraSystemPrompt, in.Model, in.Thinking, in.Channel, in.To, in.AccountID, in.ThreadID,
		in.QueueMode, in.QueueDrop, in.Label, in.SpawnedBy)
}

// validUTF8 reports whether every s is valid UTF-8 (JSON would replace
// what is not).
func validUTF8(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}
