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

// WalkTranscripts calls fn with the entries of sessionID's transcript and
// then of the transcripts it continues after resets, newest first, reading
// pageSize entries at a time. It stops when fn returns false or once budget
// entries have been read (budget <= 0: no bound) and returns how many it
// read and whether fn stopped it.
func WalkTranscripts(ctx context.Context, h HistoryReader, sessionID string, pageSize, budget int, fn func(sid string, m Message) bool) (read int, stopped bool, err error) {
	for sid := sessionID; sid != ""; {
		before := int64(0)
		for {
			page, err := h.History(ctx, sid, HistoryOptions{Limit: pageSize, BeforeSeq: before})
			if err != nil {
				return read, false, fmt.Errorf("store.WalkTranscripts: %w", err)
			}
			for i := len(page) - 1; i >= 0; i-- {
				if !fn(sid, page[i]) {
					return read + len(page) - i, true, nil
				}
			}
			read += len(page)
			if budget > 0 && read >= budget {
				return read, false, nil
			}
			if len(page) < pageSize || page[0].Seq <= 1 {
				break
			}
			before = page[0].Seq
		}
		prev, err := PreviousSessionID(ctx, h, sid)
		if err != nil {
			return read, false, err
		}
		sid = prev
	}
	return read, false, nil
}
