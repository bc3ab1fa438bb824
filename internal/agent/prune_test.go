package agent

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// TestPruningAfterTheTTL: old tool results go out whole while the prompt
// cache is warm, soft-trimmed once the TTL has passed, and the transcript
// keeps them whole.
func TestPruningAfterTheTTL(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 5, 0, 0, 0, time.UTC)}
	var mu sync.Mutex
	var reqs []*provider.Request
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		mu.Lock()
		reqs = append(reqs, req)
		mu.Unlock()
		if lastUser(req) == "read" && req.Messages[len(req.Messages)-1].Role == provider.RoleUser {
			var calls []provider.ToolCall
			for _, id := range []string{"c1", "c2", "c3", "c4", "c5", "c6"} {
				calls = append(calls, provider.ToolCall{ID: id, Name: "read", Arguments: json.RawMessage(`{}`)})
			}
			return toolTurn(calls...), nil
		}
		return textReply("ok"), nil
	}, func(c *Config) {
		c.Now = clock.now
		// The fake provider's tiny reported usage halves the estimates:
		// 54,000 characters of results weigh about 6,800 tokens, over 30%.
		c.Models = windowModels{c.Models.(staticModels).p, 20000}
		c.Pruning = PruningConfig{Enabled: true, TTL: 5 * time.Minute, HardClear: true}
		c.Tools = func(context.Context, RunInfo) *tools.Set {
			return tools.NewSet(funcTool{name: "read", fn: func(context.Context, json.RawMessage) (*tools.Result, error) {
				return &tools.Result{Text: strings.Repeat("x", 9000)}, nil
			}})
		}
	})
	for i, msg := range []string{"read", "two", "three"} {
		id := string(rune('a' + i))
		h.submit(Input{RunID: id, Message: msg})
		if got := h.wait(id); got.Status != store.RunOK {
			t.Fatalf("%s: %+v", id, got)
		}
	}
	longest := func(req *provider.Request) int {
		n := 0
		for _, m := range req.Messages {
			if m.Role == provider.RoleTool {
				n = max(n, len(m.Text))
			}
		}
		return n
	}
	mu.Lock()
	warm := longest(reqs[len(reqs)-1])
	mu.Unlock()
	if warm != 9000 {
		t.Errorf("within the TTL a result went out with %d chars, want 9000", warm)
	}
	clock.add(6 * time.Minute)
	h.submit(Input{RunID: "d", Message: "four"})
	h.wait("d")
	mu.Lock()
	cold := longest(reqs[len(reqs)-1])
	mu.Unlock()
	if cold != 2*1500+5 {
		t.Errorf("after the TTL the longest result has %d chars, want the soft trim (3005)", cold)
	}
	for _, m := range h.transcript("agent:main:main") {
		if msg := m.Entry.Message; msg != nil && isToolResult(msg.Role) && len(msg.Content.Text()) != 9000 {
			t.Errorf("the transcript's tool result changed to %d chars", len(msg.Content.Text()))
		}
	}
}
