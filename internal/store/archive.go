package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/transcript"
)

// HistoryReader is the part of a store that reads transcripts.
type HistoryReader interface {
	History(ctx context.Context, sessionID string, opts HistoryOptions) ([]Message, error)
}

// MaxTranscriptChain bounds how many archived transcripts TranscriptChain
// follows back.
const MaxTranscriptChain = 256

// PreviousSessionID returns the transcript that sessionID's transcript
// continues after a reset (the previousSessionId of its opening reset
// entry), or "" when it continues none.
func PreviousSessionID(ctx context.Context, h HistoryReader, sessionID string) (string, error) {
	first, err := h.History(ctx, sessionID, HistoryOptions{BeforeSeq: 2, Limit: 1})
	if err != nil {
		return "", fmt.Errorf("store.PreviousSessionID: %w", err)
	}
	if len(first) == 0 || first[0].Entry.Type != transcript.TypeReset {
		return "", nil
	}
	var prev string
	if raw, ok := first[0].Entry.Extra["previousSessionId"]; ok {
		_ = json.Unmarshal(raw, &prev)
	}
	return prev, nil
}

// TranscriptChain returns sessionID followed by the transcripts it
// continues after resets, newest first, at most MaxTranscriptChain of them.
func TranscriptChain(ctx context.Context, h HistoryReader, sessionID string) ([]string, error) {
	chain := []string{sessionID}
	seen := map[string]bool{sessionID: true}
	for id := sessionID; len(chain) < MaxTranscriptChain; {
		prev, err := PreviousSessionID(ctx, h, id)
		if err != nil {
			return chain, err
		}
		if prev == "" || seen[prev] {
			break
		}
		seen[prev] = true
		chain = append(chain, prev)
		id = prev
	}
	return chain, nil
}
