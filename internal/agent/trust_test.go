package agent

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// TestSubmitStoresTheOrigin: where an input comes from is decided once,
// at Submit, from its door (channel, provenance, key) or the chain it
// continues, and stored with the run; the session is marked too.
func TestSubmitStoresTheOrigin(t *testing.T) {
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return textReply("ok"), nil
	}, nil)
	for _, tc := range []struct {
		name string
		in   Input
		want string
	}{
		{"operator", Input{RunID: "op", Message: "hi"}, ""},
		{"webhook", Input{RunID: "wh", SessionKey: "agent:main:hook:x", Message: "hi", Channel: "webhook", Provenance: &Provenance{Kind: "hook"}}, "webhook"},
		{"a2a", Input{RunID: "a2", SessionKey: "agent:main:a2a:x", Message: "hi", Channel: "a2a"}, "a2a"},
		{"room", Input{RunID: "rm", SessionKey: "agent:main:irc:group:#ops", Message: "hi", Channel: "irc"}, "irc room"},
		{"operator into a room", Input{RunID: "op2", SessionKey: "agent:main:irc:group:#ops2", Message: "hi", Channel: "webchat"}, ""},
		// An inter-session message (channel internal) whose chain came
		// from outside stays outside, whatever its own door says.
		{"inherited", Input{RunID: "in", SessionKey: "agent:main:other", Message: "hi", Channel: "internal",
			Provenance: &Provenance{Kind: "inter_session"}, Chain: &tools.Chain{ID: "c", Hops: 2, Untrusted: "a2a"}}, "a2a"},
		// A chain the runner starts anew keeps the origin it was given.
		{"inherited, no chain id", Input{RunID: "in2", SessionKey: "agent:main:other2", Message: "hi", Channel: "internal",
			Chain: &tools.Chain{Untrusted: "webhook"}}, "webhook"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.submit(tc.in)
			run := h.wait(tc.in.RunID)
			var in Input
			if err := json.Unmarshal(run.Input, &in); err != nil {
				t.Fatal(err)
			}
			if in.Chain == nil || in.Chain.Untrusted != tc.want || in.Chain.ID == "" {
				t.Fatalf("stored chain = %+v, want untrusted %q", in.Chain, tc.want)
			}
			sess, err := h.store.GetSession(context.Background(), run.SessionKey)
			if err != nil {
				t.Fatal(err)
			}
			if got := SessionUntrusted(sess); got != tc.want {
				t.Errorf("session marked %q, want %q", got, tc.want)
			}
			if tc.want != "" {
				var prov string
				for _, m := range h.transcript(run.SessionKey) {
					if p := m.Entry.Message.Provenance; p != nil && m.RunID == tc.in.RunID {
						prov = p.Untrusted
					}
				}
				if tc.in.Provenance != nil && prov != tc.want {
					t.Errorf("input provenance untrusted = %q, want %q", prov, tc.want)
				}
			}
		})
	}
}

// TestToolsReadTheOriginFromTheCaller: a run's tool calls carry its
// origin in the caller's chain (what the host-tool gate reads), and a
// tool that causes another run hands it on.
func TestToolsReadTheOriginFromTheCaller(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{}
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		if len(req.Messages) > 0 && req.Messages[len(req.Messages)-1].Role == provider.RoleTool {
			return textReply("done"), nil
		}
		return toolTurn(provider.ToolCall{ID: "c1", Name: "probe", Arguments: json.RawMessage(`{}`)}), nil
	}, func(c *Config) {
		c.Tools = func(context.Context, RunInfo) *tools.Set {
			return tools.NewSet(funcTool{"probe", func(ctx context.Context, _ json.RawMessage) (*tools.Result, error) {
				c := tools.CallerFrom(ctx)
				mu.Lock()
				seen[c.RunID] = c.Chain.Untrusted
				mu.Unlock()
				return &tools.Result{Text: "ok"}, nil
			}})
		}
	})
	h.submit(Input{RunID: "op", Message: "hi"})
	h.submit(Input{RunID: "wh", SessionKey: "agent:main:hook:y", Message: "hi", Channel: "webhook", Provenance: &Provenance{Kind: "hook"}})
	// A run stored before chains carried the origin: its door decides.
	old, _ := json.Marshal(Input{RunID: "old", SessionKey: "agent:main:a2a:z", AgentID: "main", Message: "hi", Channel: "a2a",
		Chain: &tools.Chain{ID: "old", Path: []string{"agent:main:a2a:z"}}})
	if err := h.store.CreateRun(context.Background(), &store.Run{RunID: "old", SessionKey: "agent:main:a2a:z", AgentID: "main",
		Status: store.RunQueued, Input: old, CreatedAt: h.runner.now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.runner.Pull(context.Background(), "agent:main:a2a:z"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"op", "wh", "old"} {
		h.wait(id)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := map[string]string{"op": "", "wh": "webhook", "old": "a2a"}; !cmp.Equal(seen, want) {
		t.Fatalf("origins the tools saw = %v, want %v", seen, want)
	}
}

// TestOutsideInputWaitsForATurnOfItsOwn: a steered or collected message
// from outside never joins a run of more trust (its tools would run with
// the operator's trust); it runs next, as its own turn. A message of the
// operator may join an outside run (the turn keeps the lesser trust).
func TestOutsideInputWaitsForATurnOfItsOwn(t *testing.T) {
	for _, mode := range []string{ModeSteer, ModeCollect} {
		t.Run(mode, func(t *testing.T) {
			var log reqLog
			inModel := make(chan struct{}, 8)
			release := make(chan struct{})
			h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
				if log.add(req) == 1 {
					inModel <- struct{}{}
					<-release
					return toolTurn(provider.ToolCall{ID: "c1", Name: "noop", Arguments: json.RawMessage(`{}`)}), nil
				}
				return textReply("re " + lastUser(req)), nil
			}, func(c *Config) {
				c.Tools = func(context.Context, RunInfo) *tools.Set {
					return tools.NewSet(funcTool{"noop", func(context.Context, json.RawMessage) (*tools.Result, error) {
						return &tools.Result{Text: "noop"}, nil
					}})
				}
			})
			const key = "agent:main:main"
			h.submit(Input{RunID: "a1", Message: "operator"})
			<-inModel
			outside := &tools.Chain{ID: "x", Hops: 1, Untrusted: "webhook"}
			h.submit(Input{RunID: "u1", Message: "from outside", Channel: "internal", Chain: outside, QueueMode: mode})
			h.submit(Input{RunID: "o2", Message: "operator again", QueueMode: mode})
			waitQueued(t, h.runner, key, 2)
			close(release)
			for _, id := range []string{"a1", "u1", "o2"} {
				if r := h.wait(id); r.Status != store.RunOK {
					t.Fatalf("%s = %s %s", id, r.Status, r.Error)
				}
			}
			// The outside input had a model call of its own (it did not
			// join the operator's turn). The operator's second message
			// steers into the operator's run, but is not collected into
			// the outside turn.
			ownTurn := func(id string) bool {
				for _, ev := range h.eventsFor(id) {
					if ev.Stream == StreamLifecycle && ev.Phase == PhaseModel {
						return true
					}
				}
				return false
			}
			if !ownTurn("u1") {
				t.Fatalf("u1 joined the operator's turn: model calls %q", log.get())
			}
			if want := mode == ModeCollect; ownTurn("o2") != want {
				t.Fatalf("o2 had a turn of its own: %v, want %v; model calls %q", !want, want, log.get())
			}
		})
	}
}
