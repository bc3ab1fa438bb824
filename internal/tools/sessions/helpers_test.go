package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlite"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// testNow is the fixed clock of the tool tests.
var testNow = time.Date(2026, 3, 8, 12, 0, 0, 0, time.UTC)

// errNoRunner is what the fake runner answers: the read-only tools never
// start runs.
var errNoRunner = errors.New("fake runner: no runs in this test")

type fakeMessenger struct{}

func (fakeMessenger) Send(context.Context, Message) (*store.Run, error) { return nil, errNoRunner }

func (fakeMessenger) Wait(context.Context, string, time.Duration) (*store.Run, bool, error) {
	return nil, false, errNoRunner
}

func (fakeMessenger) Reply(context.Context, *store.Run) (string, error) { return "", errNoRunner }

// testEnv is a session tool set over a real sqlite store.
type testEnv struct {
	t        *testing.T
	st       *sqlite.Store
	tools    *Tools
	stateDir string
}

type envOption func(*Deps)

// withStore wraps the store the tools read.
func withStore(wrap func(Store) Store) envOption {
	return func(d *Deps) { d.Store = wrap(d.Store) }
}

// newEnv returns tools configured by the JSON5 text cfg ("" for the
// defaults) over an empty store.
func newEnv(t *testing.T, cfg string, opts ...envOption) *testEnv {
	t.Helper()
	dir := t.TempDir()
	stateDir := dir + "/state"
	c, _, err := config.Parse("test.json5", []byte(cfg), config.MapEnv(map[string]string{config.EnvStateDir: stateDir}))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	st, err := sqlite.Open(t.Context(), dir+"/switchboard.db", sqlite.Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	d := Deps{
		Store:     st,
		Messenger: fakeMessenger{},
		Settings:  settings.Resolve(c),
		Now:       func() time.Time { return testNow },
		StateDir:  stateDir,
	}
	for _, o := range opts {
		o(&d)
	}
	ts := New(d)
	return &testEnv{t: t, st: st, tools: ts, stateDir: stateDir}
}

// sess seeds a session. Defaults: a fresh SessionID, AgentID from the key,
// the gateway row kind, updated a minute before testNow.
func (e *testEnv) sess(s store.Session) *store.Session {
	e.t.Helper()
	if s.SessionID == "" {
		s.SessionID = uuid.NewString()
	}
	if s.AgentID == "" {
		s.AgentID = sessionkey.AgentID(s.Key)
	}
	if s.Kind == "" {
		s.Kind = string(sessionkey.RowKindOf(s.Key))
	}
	if s.UpdatedAt.IsZero() {
		s.UpdatedAt = testNow.Add(-time.Minute)
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = s.UpdatedAt
	}
	if err := e.st.CreateSession(e.t.Context(), &s); err != nil {
		e.t.Fatalf("CreateSession(%q): %v", s.Key, err)
	}
	return &s
}

// keys seeds sessions with default fields, updated one second apart in
// the order given (the first is the most recent).
func (e *testEnv) keys(keys ...string) {
	e.t.Helper()
	for i, k := range keys {
		e.sess(store.Session{Key: k, UpdatedAt: testNow.Add(-time.Duration(i+1) * time.Second)})
	}
}

// msgs appends messages to a transcript.
func (e *testEnv) msgs(sessionID string, ms ...*transcript.Message) {
	e.t.Helper()
	in := make([]store.Message, len(ms))
	for i, m := range ms {
		in[i] = store.Message{Entry: transcript.MessageEntry(m, testNow)}
	}
	if _, err := e.st.AppendMessages(e.t.Context(), sessionID, in); err != nil {
		e.t.Fatalf("AppendMessages: %v", err)
	}
}

// tool returns the named tool of the set.
func (e *testEnv) tool(name string) tools.Tool {
	e.t.Helper()
	for _, tl := range e.tools.All() {
		if tl.Name() == name {
			return tl
		}
	}
	e.t.Fatalf("no tool %q", name)
	return nil
}

// call runs a tool as caller and returns its details as generic JSON. A
// thrown error is returned as is.
func (e *testEnv) call(caller tools.Caller, name string, args any) (map[string]any, error) {
	e.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		e.t.Fatal(err)
	}
	res, err := e.tool(name).Call(tools.WithCaller(e.t.Context(), caller), raw)
	if err != nil {
		return nil, err
	}
	return detailsOf(e.t, res), nil
}

// mustCall is call failing the test on a thrown error.
func (e *testEnv) mustCall(caller tools.Caller, name string, args any) map[string]any {
	e.t.Helper()
	d, err := e.call(caller, name, args)
	if err != nil {
		e.t.Fatalf("%s(%v): %v", name, args, err)
	}
	return d
}

// detailsOf decodes a result's details and checks the envelope: the text is
// the details as two-space-indented JSON.
func detailsOf(t *testing.T, res *tools.Result) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.Details)
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(res.Text), &fromText); err != nil {
		t.Fatalf("text is not JSON: %v\n%s", err, res.Text)
	}
	if fmt.Sprint(fromText) != fmt.Sprint(d) {
		t.Errorf("text and details differ:\ntext %v\ndetails %v", fromText, d)
	}
	return d
}

// Callers.
var (
	mainCaller = tools.Caller{SessionKey: "agent:main:main", AgentID: "main"}
	noSession  = tools.Caller{}
)

func sandboxed(key string) tools.Caller {
	return tools.Caller{SessionKey: key, Sandboxed: true}
}

// Messages.
func userMsg(text string) *transcript.Message { return transcript.NewUserMessage(text, testNow) }

func assistantMsg(text string) *transcript.Message {
	return transcript.NewAssistantMessage([]transcript.Block{transcript.TextBlock(text)}, testNow)
}

func toolResultMsg(text string) *transcript.Message {
	return transcript.NewToolResult("call-1", "exec", text, nil, false, testNow)
}

// legacyToolMsg is a message with the legacy role "tool".
func legacyToolMsg(text string) *transcript.Message {
	return &transcript.Message{Role: transcript.RoleTool, Content: transcript.StringContent(text), Timestamp: testNow.UnixMilli()}
}

// rowKeys returns the key of each sessions_list row.
func rowKeys(d map[string]any) []string {
	var out []string
	for _, r := range d["sessions"].([]any) {
		out = append(out, r.(map[string]any)["key"].(string))
	}
	return out
}

// rowByKey returns the sessions_list row with the key.
func rowByKey(t *testing.T, d map[string]any, key string) map[string]any {
	t.Helper()
	for _, r := range d["sessions"].([]any) {
		if m := r.(map[string]any); m["key"] == key {
			return m
		}
	}
	t.Fatalf("no row %q in %v", key, rowKeys(d))
	return nil
}

// texts returns the text of each message of a result's messages member.
func texts(msgs any) []string {
	out := []string{}
	for _, m := range msgs.([]any) {
		mm := m.(map[string]any)
		switch c := mm["content"].(type) {
		case string:
			out = append(out, c)
		case []any:
			s := ""
			for _, b := range c {
				if t, ok := b.(map[string]any)["text"].(string); ok {
					s += t
				}
			}
			out = append(out, s)
		}
	}
	return out
}

// errInjected is the error failingStore injects.
var errInjected = errors.New("injected store failure")

// failingStore fails chosen reads of the store it wraps.
type failingStore struct {
	Store
	failByID    bool
	failHistory bool
}

func (s *failingStore) SessionsByID(ctx context.Context, id string) ([]*store.Session, error) {
	if s.failByID {
		return nil, errInjected
	}
	return s.Store.SessionsByID(ctx, id)
}

func (s *failingStore) History(ctx context.Context, sessionID string, opts store.HistoryOptions) ([]store.Message, error) {
	if s.failHistory {
		return nil, errInjected
	}
	return s.Store.History(ctx, sessionID, opts)
}

// recordingStore records the window of the last History read.
type recordingStore struct {
	Store
	mu    sync.Mutex
	limit int
}

func (s *recordingStore) History(ctx context.Context, sessionID string, opts store.HistoryOptions) ([]store.Message, error) {
	s.mu.Lock()
	s.limit = opts.Limit
	s.mu.Unlock()
	return s.Store.History(ctx, sessionID, opts)
}

func (s *recordingStore) lastLimit() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limit
}
