package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlite"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// fixture is a transcript in the reference's format, with unknown members
// at every level (entry, message, block, __openclaw, usage).
var fixture = strings.Join([]string{
	`{"type":"session","version":4,"id":"b021fe47-3306-4c27-a716-95a392d331b6","timestamp":"2026-02-03T04:05:06.789Z","cwd":"/home/me/.openclaw/workspace"}`,
	`{"type":"model_change","id":"a1","parentId":null,"timestamp":"2026-02-03T04:05:06.790Z","provider":"openai","modelId":"gpt-test"}`,
	`{"type":"custom","id":"a2","parentId":"a1","timestamp":"2026-02-03T04:05:06.791Z","customType":"model-snapshot","data":{"provider":"openai","modelApi":"openai-completions"}}`,
	`{"type":"message","id":"a3","parentId":"a2","timestamp":"2026-02-03T04:05:07.000Z","message":{"role":"user","content":"hello there","timestamp":1770091507000,"idempotencyKey":"k-1","__openclaw":{"senderIsOwner":true,"transport":{"clients":["webchat"]}}}}`,
	`{"type":"message","id":"a4","parentId":"a3","timestamp":"2026-02-03T04:05:08.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hm","thinkingSignature":"sig","redacted":false},{"type":"text","text":"Let me look.","textSignature":"t1"},{"type":"toolCall","id":"call_1","name":"sessions_list","arguments":{"limit":5}}],"api":"openai-completions","provider":"openai","model":"gpt-test","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"input":0.001,"output":0.002,"cacheRead":0,"cacheWrite":0,"total":0.003},"reasoning":2},"stopReason":"toolUse","timestamp":1770091508000,"responseId":"resp_1","__openclaw":{"runId":"run-1"},"futureField":[1,2,3]}}`,
	`{"type":"message","id":"a5","parentId":"a4","timestamp":"2026-02-03T04:05:09.000Z","message":{"role":"toolResult","toolCallId":"call_1","toolName":"sessions_list","content":[{"type":"text","text":"{\"count\":0}"}],"details":{"count":0,"sessions":[]},"isError":false,"timestamp":1770091509000}}`,
	`{"type":"message","id":"a6","parentId":"a5","timestamp":"2026-02-03T04:05:10.000Z","message":{"role":"assistant","content":[{"type":"text","text":"No sessions."}],"api":"openai-completions","provider":"openai","model":"gpt-test","usage":{"input":20,"output":3,"cacheRead":0,"cacheWrite":0,"totalTokens":23},"stopReason":"stop","timestamp":1770091510000}}`,
	`{"type":"compaction","id":"a7","parentId":"a6","timestamp":"2026-02-03T04:05:11.000Z","summary":"talked","firstKeptEntryId":"a6","tokensBefore":123}`,
}, "\n") + "\n"

func openStore(t *testing.T) store.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "store.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func export(t *testing.T, s store.Store, key string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := store.ExportTranscript(context.Background(), s, key, &buf); err != nil {
		t.Fatalf("ExportTranscript(%q): %v", key, err)
	}
	return buf.String()
}

func lines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func TestTranscriptRoundTrip(t *testing.T) {
	ctx := context.Background()
	const key = "agent:main:main"
	s1 := openStore(t)
	sess, err := store.ImportTranscript(ctx, s1, key, "", strings.NewReader(fixture))
	if err != nil {
		t.Fatalf("ImportTranscript: %v", err)
	}
	if sess.SessionID != "b021fe47-3306-4c27-a716-95a392d331b6" || sess.AgentID != "main" || sess.Kind != "direct" {
		t.Errorf("imported session = %+v", sess)
	}
	if got := sess.CreatedAt.Format("2006-01-02T15:04:05.000Z07:00"); got != "2026-02-03T04:05:06.789Z" {
		t.Errorf("CreatedAt = %s, want the header timestamp", got)
	}
	if got := sess.UpdatedAt.Format("2006-01-02T15:04:05.000Z07:00"); got != "2026-02-03T04:05:11.000Z" {
		t.Errorf("UpdatedAt = %s, want the last entry's timestamp", got)
	}
	hist, err := s1.History(ctx, sess.SessionID, store.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 7 || hist[3].RunID != "run-1" || hist[3].Role != "assistant" || hist[1].Role != "" {
		t.Errorf("stored messages: %d, run %q, role %q", len(hist), hist[3].RunID, hist[3].Role)
	}
	if want := "2026-02-03T04:05:08Z"; hist[3].CreatedAt.Format("2006-01-02T15:04:05Z07:00") != want {
		t.Errorf("CreatedAt of entry 4 = %v, want %s", hist[3].CreatedAt, want)
	}

	out1 := export(t, s1, key)
	in, got := lines(fixture), lines(out1)
	if len(got) != len(in) {
		t.Fatalf("export has %d lines, want %d:\n%s", len(got), len(in), out1)
	}
	// The header loses only cwd, which the store does not keep.
	if want := `{"type":"session","version":4,"id":"b021fe47-3306-4c27-a716-95a392d331b6","timestamp":"2026-02-03T04:05:06.789Z"}`; !jsonEqual(got[0], want) {
		t.Errorf("header = %s, want %s", got[0], want)
	}
	for i := 1; i < len(in); i++ {
		if !jsonEqual(in[i], got[i]) {
			t.Errorf("line %d changed:\n in: %s\nout: %s", i+1, in[i], got[i])
		}
	}

	// Importing the export elsewhere and exporting again is byte-identical.
	s2 := openStore(t)
	if _, err := store.ImportTranscript(ctx, s2, key, "main", strings.NewReader(out1)); err != nil {
		t.Fatalf("second ImportTranscript: %v", err)
	}
	if out2 := export(t, s2, key); out2 != out1 {
		t.Errorf("export → import → export differs:\nfirst:\n%s\nsecond:\n%s", out1, out2)
	}
}

func TestImportParseErrorWritesNothing(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	const key = "agent:main:main"
	for name, in := range map[string]string{
		"broken last line":   fixture + `{"type":"message","id":"z1","parentId":"a7",` + "\n",
		"dangling parent":    fixture + `{"type":"custom","id":"z1","parentId":"nope","timestamp":"x"}` + "\n",
		"duplicate id":       fixture + `{"type":"custom","id":"a3","parentId":"a7","timestamp":"x"}` + "\n",
		"no header":          strings.SplitN(fixture, "\n", 2)[1],
		"empty":              "",
		"message without it": fixture + `{"type":"message","id":"z1","parentId":"a7","timestamp":"x"}` + "\n",
	} {
		_, err := store.ImportTranscript(ctx, s, key, "main", strings.NewReader(in))
		if err == nil {
			t.Errorf("%s: ImportTranscript succeeded", name)
		}
		if _, err := s.GetSession(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: session written: %v", name, err)
		}
		if n, _ := s.CountMessages(ctx, "b021fe47-3306-4c27-a716-95a392d331b6"); n != 0 {
			t.Errorf("%s: %d entries written", name, n)
		}
	}
}

func TestImportSessionIDInUse(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	const hid = "b021fe47-3306-4c27-a716-95a392d331b6"
	if err := s.CreateSession(ctx, &store.Session{Key: "agent:main:other", SessionID: hid}); err != nil {
		t.Fatal(err)
	}
	sess, err := store.ImportTranscript(ctx, s, "agent:ops:telegram:group:5", "", strings.NewReader(fixture))
	if err != nil {
		t.Fatal(err)
	}
	if sess.SessionID == hid || sess.SessionID == "" {
		t.Errorf("SessionID = %q, want a new id", sess.SessionID)
	}
	if sess.AgentID != "ops" || sess.Kind != "group" {
		t.Errorf("AgentID, Kind = %q, %q; want ops, group", sess.AgentID, sess.Kind)
	}
	if n, _ := s.CountMessages(ctx, sess.SessionID); n != 7 {
		t.Errorf("new transcript has %d entries, want 7", n)
	}
	if n, _ := s.CountMessages(ctx, hid); n != 0 {
		t.Errorf("other session's transcript has %d entries, want 0", n)
	}

	// An id held only by a stored transcript (no session) is not reused either.
	if _, err := s.AppendMessages(ctx, "orphan", []store.Message{{Entry: transcript.Entry{Type: "custom"}}}); err != nil {
		t.Fatal(err)
	}
	orphanFixture := strings.Replace(fixture, hid, "orphan", 1)
	sess, err = store.ImportTranscript(ctx, s, "agent:main:x", "", strings.NewReader(orphanFixture))
	if err != nil {
		t.Fatal(err)
	}
	if sess.SessionID == "orphan" {
		t.Errorf("import reused a transcript id that has entries")
	}
}

func TestImportIntoExistingSession(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	const key = "agent:main:main"
	earlier := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := s.CreateSession(ctx, &store.Session{Key: key, SessionID: "current", Label: "keep"}); err != nil {
		t.Fatal(err)
	}
	prev, err := s.AppendMessages(ctx, "current", []store.Message{{Entry: transcript.MessageEntry(
		transcript.NewUserMessage("earlier", earlier), earlier)}})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := store.ImportTranscript(ctx, s, key, "main", strings.NewReader(fixture))
	if err != nil {
		t.Fatal(err)
	}
	if sess.SessionID != "current" || sess.Label != "keep" {
		t.Errorf("session changed: %+v", sess)
	}
	hist, err := s.History(ctx, "current", store.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 8 {
		t.Fatalf("transcript has %d entries, want 8", len(hist))
	}
	// The first imported entry (parentId null) continues the chain.
	if p := hist[1].Entry.ParentID; hist[1].Entry.ID != "a1" || p == nil || *p != prev[0].Entry.ID {
		t.Errorf("first imported entry: id %q parent %v", hist[1].Entry.ID, p)
	}
	if p := hist[7].Entry.ParentID; p == nil || *p != "a6" {
		t.Errorf("last imported entry parent = %v, want a6", p)
	}
}

func TestExportPaging(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	const key = "agent:main:main"
	if err := s.CreateSession(ctx, &store.Session{Key: key, SessionID: "big"}); err != nil {
		t.Fatal(err)
	}
	const n = 2345
	var msgs []store.Message
	for i := range n {
		msgs = append(msgs, store.Message{Entry: transcript.Entry{
			Type: transcript.TypeCustom, ID: fmt.Sprintf("e%05d", i),
			Extra: map[string]json.RawMessage{"data": json.RawMessage(fmt.Sprint(i))},
		}})
	}
	if _, err := s.AppendMessages(ctx, "big", msgs); err != nil {
		t.Fatal(err)
	}
	out := lines(export(t, s, key))
	if len(out) != n+1 {
		t.Fatalf("export has %d lines, want %d", len(out), n+1)
	}
	for i, l := range out[1:] {
		if !strings.Contains(l, fmt.Sprintf(`"id":"e%05d"`, i)) {
			t.Fatalf("line %d = %s", i+2, l)
		}
	}
	// Empty transcript: header only.
	if err := s.CreateSession(ctx, &store.Session{Key: "agent:main:empty", SessionID: "empty"}); err != nil {
		t.Fatal(err)
	}
	if out := lines(export(t, s, "agent:main:empty")); len(out) != 1 || !strings.Contains(out[0], `"id":"empty"`) {
		t.Errorf("empty export = %q", out)
	}
	if err := store.ExportTranscript(ctx, s, "agent:main:missing", &bytes.Buffer{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("export of a missing session: %v, want ErrNotFound", err)
	}
}
