// Package storetest owns the conformance suite for store.Store: one set of
// subtests that every backend (sqlite, and postgres when configured) runs
// from its own tests with Run.
//
// Only backend test files import it. It depends on store, transcript and
// testing helpers, never on a backend.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// Run runs the conformance suite against the backend open returns. open is
// called once per subtest and must return a new, empty store; Run closes it
// when the subtest ends (a second Close from the backend's own cleanup gets
// net.ErrClosed, which the suite expects). Backends must store times with at
// least millisecond resolution; the suite uses millisecond-aligned times.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"CreateGetSession", testCreateGetSession},
		{"CreateSessionDefaults", testCreateSessionDefaults},
		{"UpdateSession", testUpdateSession},
		{"UpdateSessionFnError", testUpdateSessionFnError},
		{"DeleteSession", testDeleteSession},
		{"ListSessions", testListSessions},
		{"SessionsByID", testSessionsByID},
		{"AppendChain", testAppendChain},
		{"AppendKeepsGivenIDs", testAppendKeepsGivenIDs},
		{"AppendConcurrent", testAppendConcurrent},
		{"History", testHistory},
		{"Runs", testRuns},
		{"UpdateRun", testUpdateRun},
		{"ListRuns", testListRuns},
		{"FinishRun", testFinishRun},
		{"UsageByDay", testUsageByDay},
		{"RunStats", testRunStats},
		{"StartRun", testStartRun},
		{"PostMessage", testPostMessage},
		{"AbortInterrupted", testAbortInterrupted},
		{"CloneIndependence", testCloneIndependence},
		{"PutOutbox", testPutOutbox},
		{"GetOutboxNotFound", testGetOutboxNotFound},
		{"ListOutbox", testListOutbox},
		{"UpdateOutbox", testUpdateOutbox},
		{"FinishRunOutbox", testFinishRunOutbox},
		{"PutOutboxConcurrent", testPutOutboxConcurrent},
		{"OutboxCloneIndependence", testOutboxCloneIndependence},
		{"Subagents", testSubagents},
		{"CreateChild", testCreateChild},
		{"PruneOutbox", testPruneOutbox},
		{"CloseTwice", testCloseTwice},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { s.Close() })
			tt.fn(t, s)
		})
	}
}

// base is the suite's reference instant, millisecond aligned.
var base = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// at returns base plus sec seconds.
func at(sec int) time.Time { return base.Add(time.Duration(sec) * time.Second) }

// cmpOpts compares JSON by value (backends may reformat it), and treats nil
// and empty slices and maps alike.
var cmpOpts = cmp.Options{
	cmp.FilterValues(func(a, b json.RawMessage) bool { return len(a) > 0 || len(b) > 0 },
		cmp.Comparer(jsonEqual)),
	cmpopts.EquateEmpty(),
}

// jsonEqual reports whether a and b hold the same JSON value.
func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// fullSession returns a session with every field set.
func fullSession(key string) *store.Session {
	return &store.Session{
		Key:            key,
		SessionID:      "0195d2a4-0000-7000-8000-" + pad12(key),
		AgentID:        "main",
		Kind:           "direct",
		Channel:        "webchat",
		ChatType:       "direct",
		DisplayName:    "Display " + key,
		Label:          "label",
		SpawnedBy:      "agent:main:main",
		SpawnDepth:     2,
		Model:          "openai/gpt-test",
		ThinkingLevel:  "high",
		VerboseLevel:   "on",
		ContextTokens:  200000,
		InputTokens:    11,
		OutputTokens:   22,
		TotalTokens:    33,
		SystemSent:     true,
		AbortedLastRun: true,
		SendPolicy:     "deny",
		LastChannel:    "telegram",
		LastTo:         "user:42",
		LastAccountID:  "acct",
		DeliveryContext: &store.DeliveryContext{
			Channel: "telegram", To: "user:42", AccountID: "acct", ThreadID: "7",
		},
		CreatedAt: at(0),
		UpdatedAt: at(10),
		Extra:     json.RawMessage(`{"origin":{"provider":"telegram"},"subject":"hi"}`),
	}
}

// pad12 returns a 12-character hex-ish suffix derived from s.
func pad12(s string) string {
	const hex = "0123456789abcdef"
	var b [12]byte
	var h uint64 = 14695981039346656037
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	for i := range b {
		b[i] = hex[h&15]
		h >>= 4
	}
	return string(b[:])
}

// textMsg returns a message entry with the given role and text.
func textMsg(role, text string) store.Message {
	return store.Message{Entry: transcript.Entry{
		Type:      transcript.TypeMessage,
		Timestamp: transcript.FormatTime(base),
		Message: &transcript.Message{
			Role:      role,
			Content:   transcript.StringContent(text),
			Timestamp: base.UnixMilli(),
		},
	}}
}

func mustCreate(t *testing.T, s store.Store, sess *store.Session) {
	t.Helper()
	if err := s.CreateSession(context.Background(), sess); err != nil {
		t.Fatalf("CreateSession(%q): %v", sess.Key, err)
	}
}

func mustGet(t *testing.T, s store.Store, key string) *store.Session {
	t.Helper()
	got, err := s.GetSession(context.Background(), key)
	if err != nil {
		t.Fatalf("GetSession(%q): %v", key, err)
	}
	return got
}

func mustAppend(t *testing.T, s store.Store, sid string, msgs ...store.Message) []store.Message {
	t.Helper()
	got, err := s.AppendMessages(context.Background(), sid, msgs)
	if err != nil {
		t.Fatalf("AppendMessages(%q): %v", sid, err)
	}
	return got
}

func mustHistory(t *testing.T, s store.Store, sid string, opts store.HistoryOptions) []store.Message {
	t.Helper()
	got, err := s.History(context.Background(), sid, opts)
	if err != nil {
		t.Fatalf("History(%q, %+v): %v", sid, opts, err)
	}
	return got
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error = %v, want %v", what, err, target)
	}
}

func testCloseTwice(t *testing.T, s store.Store) {
	if err := s.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	wantErr(t, "second Close", s.Close(), net.ErrClosed)
}
