package bridge

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// fakeRuns is Runs over fixed runs and transcripts.
type fakeRuns struct {
	runs map[string]*store.Run
	msgs []store.Message
	err  error
}

func (f *fakeRuns) GetRun(_ context.Context, id string) (*store.Run, error) {
	if f.err != nil {
		return nil, f.err
	}
	r, ok := f.runs[id]
	if !ok {
		return nil, store.ErrNotFound
	}
	return r, nil
}

func (f *fakeRuns) History(_ context.Context, sessionID string, opts store.HistoryOptions) ([]store.Message, error) {
	var out []store.Message
	for _, m := range f.msgs {
		if m.SessionID == sessionID && (opts.RunID == "" || m.RunID == opts.RunID) {
			out = append(out, m)
		}
	}
	return out, nil
}

// TestA2AOutcome: how a task a restart cut is settled from its run and the
// run's transcript.
func TestA2AOutcome(t *testing.T) {
	now := time.Now()
	msg := func(runID, role, text string) store.Message {
		var m *transcript.Message
		if role == transcript.RoleUser {
			m = transcript.NewUserMessage(text, now)
		} else {
			m = transcript.NewAssistantMessage([]transcript.Block{transcript.TextBlock(text)}, now)
		}
		return store.Message{SessionID: "s1", RunID: runID, Role: role, Entry: transcript.Entry{Type: "message", Message: m}}
	}
	runs := &fakeRuns{
		runs: map[string]*store.Run{
			"ok":      {RunID: "ok", SessionID: "s1", Status: store.RunOK},
			"bare":    {RunID: "bare", Status: store.RunOK},
			"aborted": {RunID: "aborted", SessionID: "s1", Status: store.RunAborted},
			"error":   {RunID: "error", SessionID: "s1", Status: store.RunError},
		},
		msgs: []store.Message{
			msg("ok", transcript.RoleUser, "question"),
			msg("ok", transcript.RoleAssistant, "first part"),
			msg("other", transcript.RoleAssistant, "not this run"),
			msg("ok", transcript.RoleAssistant, "final answer"),
			msg("aborted", transcript.RoleAssistant, "half"),
		},
	}
	r := NewTurns(nil, nil, runs, "main")
	for _, c := range []struct {
		run   string
		reply string
		ok    bool
	}{
		{"ok", "final answer", true},
		{"bare", "", true},
		{"aborted", "", false},
		{"error", "", false},
		{"missing", "", false},
	} {
		reply, ok, err := r.Outcome(context.Background(), c.run)
		if err != nil || reply != c.reply || ok != c.ok {
			t.Errorf("Outcome(%s) = %q, %v, %v; want %q, %v", c.run, reply, ok, err, c.reply, c.ok)
		}
	}
	runs.err = errors.New("db down")
	if _, _, err := r.Outcome(context.Background(), "ok"); err == nil {
		t.Error("a store error was swallowed")
	}
}
