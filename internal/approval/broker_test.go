package approval

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/tools"
)

type recNotifier struct {
	mu        sync.Mutex
	requested []Record
	resolved  []Resolved
	ch        chan Record
}

func (n *recNotifier) ApprovalRequested(r Record) {
	n.mu.Lock()
	n.requested = append(n.requested, r)
	n.mu.Unlock()
	if n.ch != nil {
		n.ch <- r
	}
}

func (n *recNotifier) ApprovalResolved(r Resolved) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.resolved = append(n.resolved, r)
}

func TestBrokerResolve(t *testing.T) {
	dir := t.TempDir()
	j := FileJournal{Path: filepath.Join(dir, PendingFile)}
	n := &recNotifier{}
	b := NewBroker(BrokerConfig{Notifier: n, Journal: j})
	rec, err := b.Open(Request{Command: "ls", AllowedDecisions: AllowedDecisions(AskAlways)})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := j.Load(); len(got) != 1 || got[0].ID != rec.ID {
		t.Fatalf("journal = %+v", got)
	}
	if _, err := b.Resolve(rec.ID, AllowAlways, "op"); !errors.As(err, new(*DecisionNotAllowedError)) {
		t.Fatalf("allow-always under ask always: %v", err)
	}
	waited := make(chan string, 1)
	go func() {
		d, _, _ := b.Wait(context.Background(), rec.ID)
		waited <- d
	}()
	done := make(chan string, 1)
	go func() {
		d, _ := b.Await(context.Background(), rec.ID)
		done <- d
	}()
	if _, err := b.Resolve(rec.ID, Deny, "op"); err != nil {
		t.Fatal(err)
	}
	if d := <-done; d != Deny {
		t.Fatalf("Await = %q", d)
	}
	if d := <-waited; d != Deny {
		t.Fatalf("Wait = %q", d)
	}
	if _, err := b.Resolve(rec.ID, Deny, "op"); err != nil {
		t.Errorf("repeated decision: %v", err)
	}
	if _, err := b.Resolve(rec.ID, AllowOnce, "op"); !errors.Is(err, ErrAlreadyResolved) {
		t.Errorf("other decision after the first: %v", err)
	}
	if _, err := b.Resolve("nope", Deny, "op"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	if len(b.Pending()) != 0 {
		t.Errorf("still pending: %+v", b.Pending())
	}
	if got, _ := j.Load(); len(got) != 0 {
		t.Errorf("journal after decision = %+v", got)
	}
	if len(n.requested) != 1 || len(n.resolved) != 1 || n.resolved[0].Decision != Deny || n.resolved[0].ResolvedBy != "op" {
		t.Errorf("notified %+v %+v", n.requested, n.resolved)
	}
}

func TestBrokerExpiryAndCancel(t *testing.T) {
	b := NewBroker(BrokerConfig{Timeout: 20 * time.Millisecond})
	rec, _ := b.Open(Request{Command: "ls", AllowedDecisions: AllowedDecisions(AskOnMiss)})
	if d, err := b.Await(context.Background(), rec.ID); d != "" || err != nil {
		t.Fatalf("expired Await = %q %v", d, err)
	}
	if d, _, err := b.Wait(context.Background(), rec.ID); d != "" || err != nil {
		t.Fatalf("Wait after expiry = %q %v", d, err)
	}
	b = NewBroker(BrokerConfig{})
	rec, _ = b.Open(Request{Command: "ls", AllowedDecisions: AllowedDecisions(AskOnMiss)})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Await(ctx, rec.ID); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Await: %v", err)
	}
	if _, err := b.Resolve(rec.ID, AllowOnce, ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("resolve after cancel: %v", err)
	}
}

func TestBrokerConcurrentDecisions(t *testing.T) {
	b := NewBroker(BrokerConfig{})
	rec, _ := b.Open(Request{Command: "ls", AllowedDecisions: AllowedDecisions(AskOnMiss)})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := AllowOnce
			if i%2 == 1 {
				d = Deny
			}
			_, err := b.Resolve(rec.ID, d, "")
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			if !errors.Is(err, ErrAlreadyResolved) {
				t.Errorf("Resolve: %v", err)
			}
			failed++
		}
	}
	if failed != 4 {
		t.Errorf("%d decisions failed, want the 4 that differ from the first", failed)
	}
	if _, err := b.Await(context.Background(), rec.ID); err != nil {
		t.Fatal(err)
	}
}

type fakeExec struct{ ran []string }

func (*fakeExec) Name() string            { return "exec" }
func (*fakeExec) Description() string     { return "" }
func (*fakeExec) Schema() json.RawMessage { return json.RawMessage(`{}`) }
func (f *fakeExec) Call(_ context.Context, args json.RawMessage) (*tools.Result, error) {
	var a struct{ Command string }
	_ = json.Unmarshal(args, &a)
	f.ran = append(f.ran, a.Command)
	return &tools.Result{Text: "ran " + a.Command}, nil
}

func TestGate(t *testing.T) {
	dir := t.TempDir()
	al, err := OpenAllowlists(filepath.Join(dir, AllowlistFile))
	if err != nil {
		t.Fatal(err)
	}
	n := &recNotifier{ch: make(chan Record, 1)}
	b := NewBroker(BrokerConfig{Notifier: n, Timeout: time.Minute})
	clients := true
	pol := Policy{Security: "allowlist", Ask: "on-miss"}
	cfg := &GateConfig{Broker: b, Allowlists: al, Policy: func(string) Policy { return pol }, Clients: func() bool { return clients }}
	inner := &fakeExec{}
	g := cfg.Wrap(inner)
	ctx := tools.WithCaller(context.Background(), tools.Caller{AgentID: "main", SessionKey: "agent:main:main", Workspace: dir})
	call := func(cmd string) string {
		args, _ := json.Marshal(map[string]string{"command": cmd})
		res, err := g.Call(ctx, args)
		if err != nil {
			t.Fatal(err)
		}
		return res.Text
	}
	resolveNext := func(decision string) {
		go func() {
			rec := <-n.ch
			if _, err := b.Resolve(rec.ID, decision, "t"); err != nil {
				t.Error(err)
			}
		}()
	}

	resolveNext(Deny)
	if got := call("rm -rf x"); !strings.HasPrefix(got, "Exec denied (gateway id=") || !strings.HasSuffix(got, ", user-denied): rm -rf x") {
		t.Errorf("deny: %q", got)
	}
	resolveNext(AllowOnce)
	if got := call("rm -rf x"); got != "ran rm -rf x" {
		t.Errorf("allow-once: %q", got)
	}
	resolveNext(AllowAlways)
	if got := call("touch y"); got != "ran touch y" {
		t.Errorf("allow-always: %q", got)
	}
	if got := call("touch z"); got != "ran touch z" { // allowlisted now: no prompt
		t.Errorf("after allow-always: %q", got)
	}
	reopened, _ := OpenAllowlists(filepath.Join(dir, AllowlistFile))
	if !reopened.Matches("main", "touch", dir) || reopened.Matches("other", "touch", dir) {
		t.Errorf("allowlist file = %+v", reopened.List("main"))
	}
	if got := call("echo $(id)"); got != UnbindableText("echo $(id)") {
		t.Errorf("unbindable: %q", got)
	}
	clients = false
	if got := call("rm q"); !strings.HasPrefix(got, "exec denied: Headless runs cannot wait for interactive exec approval.") {
		t.Errorf("headless: %q", got)
	}
	pol.AskFallback = "full"
	if got := call("rm q"); got != "ran rm q" {
		t.Errorf("headless with askFallback full: %q", got)
	}
	if len(inner.ran) != 4 {
		t.Errorf("ran %q", inner.ran)
	}
}

// TestGateCallAsk: a call's ask may harden on-miss to always, but is
// ignored when the operator turned asking off.
func TestGateCallAsk(t *testing.T) {
	al, _ := OpenAllowlists(filepath.Join(t.TempDir(), AllowlistFile))
	pol := Policy{}
	cfg := &GateConfig{Broker: NewBroker(BrokerConfig{}), Allowlists: al, Policy: func(string) Policy { return pol }}
	inner := &fakeExec{}
	g := cfg.Wrap(inner)
	ctx := tools.WithCaller(context.Background(), tools.Caller{AgentID: "main"})
	args := json.RawMessage(`{"command":"ls","ask":"always"}`)
	if res, err := g.Call(ctx, args); err != nil || res.Text != "ran ls" {
		t.Fatalf("ask off: %+v %v", res, err)
	}
	pol = Policy{Security: "full", Ask: "on-miss"}
	if res, err := g.Call(ctx, args); err != nil || !strings.HasPrefix(res.Text, "exec denied: Headless runs") {
		t.Fatalf("hardened to always without clients: %+v %v", res, err)
	}
}

// TestAllowlistPaths: a script approved by relative path is bound to that
// file, not to the same name in another directory; bare names match only
// PATH lookups.
func TestAllowlistPaths(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		if err := os.WriteFile(filepath.Join(d, "build.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	al, _ := OpenAllowlists(filepath.Join(t.TempDir(), AllowlistFile))
	if err := al.Add("main", []string{"./build.sh", "git"}, "./build.sh && git status", a); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		bin, cwd string
		want     bool
	}{
		{"./build.sh", a, true},
		{filepath.Join(a, "build.sh"), b, true},
		{"./build.sh", b, false},
		{"git", b, true},
		{"./git", a, false},
		{"/opt/elsewhere/git", a, false},
	} {
		if got := al.Matches("main", tc.bin, tc.cwd); got != tc.want {
			t.Errorf("Matches(%q in %s) = %v, want %v", tc.bin, tc.cwd, got, tc.want)
		}
	}
}
