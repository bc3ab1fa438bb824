package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// windowModels resolves to the harness provider with a context window.
type windowModels struct {
	p      provider.Provider
	window int
}

func (m windowModels) ResolveModel(agentID, ref string) (Model, error) {
	return Model{Provider: m.p, ProviderID: "fake", ModelID: "fake-1", API: "openai-completions", ContextWindow: m.window}, nil
}

const goodSummary = "## Decisions\n- d\n## Open TODOs\n- t\n## Constraints/Rules\n- c\n## Pending user asks\n- %s\n## Exact identifiers\n- ID-1"

// summariser answers summary requests with a summary that passes the
// audit (quoting the latest request) and other requests with fn.
func summariser(fn func(ctx context.Context, req *provider.Request) ([]provider.Event, error)) func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
	return func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		if req.System != compaction.SystemPrompt {
			return fn(ctx, req)
		}
		latest := ""
		if _, rest, ok := strings.Cut(req.Messages[0].Text, compaction.LatestRequestMarker+"\n"); ok {
			latest, _, _ = strings.Cut(rest, "\n"+compaction.UntrustedEnd)
		}
		return textReply(strings.Replace(goodSummary, "%s", latest, 1)), nil
	}
}

func validPairs(t *testing.T, msgs []provider.Message) {
	t.Helper()
	called := map[string]bool{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			called[c.ID] = true
		}
		if m.Role == provider.RoleTool && !called[m.ToolCallID] {
			t.Errorf("tool result %s without its call in the view", m.ToolCallID)
		}
	}
}

// TestCompactKeepsToolPairsAndTheLatestAsk compacts a transcript of tool
// turns: the kept tail starts at a call, never at a result, the summary
// opens with the latest request, and the full history stays stored.
func TestCompactKeepsToolPairsAndTheLatestAsk(t *testing.T) {
	var h *harness
	step := 0
	h = newHarness(t, summariser(func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		step++
		if last := req.Messages[len(req.Messages)-1]; last.Role == provider.RoleUser {
			return toolTurn(provider.ToolCall{ID: "call-" + string(rune('a'+step)), Name: "big", Arguments: json.RawMessage(`{}`)}), nil
		}
		return textReply("done"), nil
	}), func(c *Config) {
		c.Models = windowModels{c.Models.(staticModels).p, 100000}
		c.Compaction = CompactionConfig{KeepRecentTokens: 3000, QualityGuard: true}
		c.Tools = func(context.Context, RunInfo) *tools.Set {
			return tools.NewSet(funcTool{name: "big", fn: func(context.Context, json.RawMessage) (*tools.Result, error) {
				return &tools.Result{Text: strings.Repeat("r", 8000)}, nil
			}})
		}
	})
	for i, msg := range []string{"first ask", "second ask", "third ask ID-1"} {
		id := "run-" + string(rune('1'+i))
		h.submit(Input{RunID: id, Message: msg})
		if got := h.wait(id); got.Status != store.RunOK {
			t.Fatalf("%s = %+v", id, got)
		}
	}
	ctx := context.Background()
	before := h.transcript("agent:main:main")
	res, err := h.runner.Compact(ctx, "agent:main:main", "focus")
	if err != nil || !res.Compacted {
		t.Fatalf("Compact = %+v, %v", res, err)
	}
	if !strings.HasPrefix(res.Summary, "## Latest unresolved user request\n\"third ask ID-1\"\n\n## Decisions") {
		t.Errorf("summary = %q", res.Summary)
	}
	if res.TokensAfter >= res.TokensBefore {
		t.Errorf("tokens %d → %d", res.TokensBefore, res.TokensAfter)
	}
	after := h.transcript("agent:main:main")
	if len(after) != len(before)+1 || after[len(after)-1].Entry.Type != transcript.TypeCompaction {
		t.Fatalf("transcript grew from %d to %d entries, last %q", len(before), len(after), after[len(after)-1].Entry.Type)
	}
	v, err := h.runner.view(ctx, after[0].SessionID)
	if err != nil {
		t.Fatal(err)
	}
	first := v.entries[0].Entry.Message
	if first == nil || isToolResult(first.Role) || v.entries[0].Entry.ID != res.FirstKeptEntryID {
		t.Errorf("kept tail starts with %+v", first)
	}
	msgs := v.messages()
	if !strings.HasPrefix(msgs[0].Text, compaction.SummaryPrefix) {
		t.Errorf("view does not open with the summary")
	}
	validPairs(t, msgs)
	sess, _ := h.store.GetSession(ctx, "agent:main:main")
	if !strings.Contains(string(sess.Extra), `"compactionCount":1`) {
		t.Errorf("session extra = %s", sess.Extra)
	}
	// The next turn goes out with the summary and the tail only.
	h.submit(Input{RunID: "run-4", Message: "fourth"})
	if got := h.wait("run-4"); got.Status != store.RunOK {
		t.Fatalf("run-4 = %+v", got)
	}
}

// TestSummaryFailingTheAuditKeepsHistory: a summariser that never writes
// the required sections leaves the transcript unchanged.
func TestSummaryFailingTheAuditKeepsHistory(t *testing.T) {
	calls := 0
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		if req.System == compaction.SystemPrompt {
			calls++
			return textReply("just some prose"), nil
		}
		return textReply(strings.Repeat("a", 20000)), nil
	}, func(c *Config) {
		c.Models = windowModels{c.Models.(staticModels).p, 100000}
		c.Compaction = CompactionConfig{KeepRecentTokens: 1000, QualityGuard: true, QualityMaxRetries: 2}
	})
	for _, id := range []string{"r1", "r2", "r3"} {
		h.submit(Input{RunID: id, Message: id})
		h.wait(id)
	}
	n := len(h.transcript("agent:main:main"))
	_, err := h.runner.Compact(context.Background(), "agent:main:main", "")
	if !errors.Is(err, errAudit) || calls != 3 {
		t.Errorf("Compact err = %v after %d summary calls, want the audit failure after 3", err, calls)
	}
	if got := len(h.transcript("agent:main:main")); got != n {
		t.Errorf("transcript changed: %d → %d entries", n, got)
	}
}

func TestWindowGuard(t *testing.T) {
	h := newHarness(t, echo, func(c *Config) { c.Models = windowModels{c.Models.(staticModels).p, 3000} })
	h.submit(Input{RunID: "r1", Message: "hi"})
	got := h.wait("r1")
	if got.Status != store.RunError || got.Error != "Model context window too small (3000 tokens; source=modelsConfig). Minimum is 4000." {
		t.Errorf("run = %s %q", got.Status, got.Error)
	}
}

// TestOverflowUnrecoverable: a provider that refuses every request ends
// the run with the reference's text and the reasons; the session stays
// usable.
func TestOverflowUnrecoverable(t *testing.T) {
	refuse := true
	h := newHarness(t, summariser(func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		if refuse {
			return nil, &provider.Error{StatusCode: 400, Message: "This model's maximum context length is 8192 tokens. context_length_exceeded"}
		}
		return textReply("fine"), nil
	}), func(c *Config) { c.Models = windowModels{c.Models.(staticModels).p, 100000} })
	for _, id := range []string{"a", "b"} {
		refuse = false
		h.submit(Input{RunID: id, Message: strings.Repeat("m", 4000)})
		h.wait(id)
	}
	refuse = true
	h.submit(Input{RunID: "r1", Message: "please"})
	got := h.wait("r1")
	if got.Status != store.RunError || !strings.HasPrefix(got.Error, compaction.UnrecoverableText+" (auto-compaction tried: ") {
		t.Errorf("run = %s %q", got.Status, got.Error)
	}
	refuse = false
	h.submit(Input{RunID: "r2", Message: "again"})
	if got := h.wait("r2"); got.Status != store.RunOK {
		t.Errorf("session unusable after the failed recovery: %+v", got)
	}
}

// TestManySessionsPastTheirWindow: every session past its window gets one
// compaction and its turn answered, with summary calls never more than
// MaxConcurrent at once.
func TestManySessionsPastTheirWindow(t *testing.T) {
	const sessions, limit = 60, 3
	var mu sync.Mutex
	active, peak := 0, 0
	h := newHarness(t, summariser(func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return textReply("ok"), nil
	}), func(c *Config) {
		c.Models = windowModels{c.Models.(staticModels).p, 8000}
		c.Compaction = CompactionConfig{MaxConcurrent: limit, KeepRecentTokens: 1000}
	})
	inner := h.prov.fn
	h.prov.fn = func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		if req.System == compaction.SystemPrompt {
			mu.Lock()
			active++
			peak = max(peak, active)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			defer func() { mu.Lock(); active--; mu.Unlock() }()
		}
		return inner(ctx, req)
	}
	keys := make([]string, sessions)
	for i := range keys {
		keys[i] = fmt.Sprint("agent:main:s", i)
		// 30k estimated tokens: past the 6k threshold even after the fake
		// provider's tiny reported usage halves the estimates.
		fillTranscript(t, h, keys[i], 40, 3000)
	}
	ctx := context.Background()
	for i, k := range keys {
		if _, _, err := h.runner.Submit(ctx, Input{RunID: fmt.Sprint("r", i), SessionKey: k, AgentID: "main", Message: "go"}); err != nil {
			t.Fatal(err)
		}
	}
	for i, k := range keys {
		if got := h.wait(fmt.Sprint("r", i)); got.Status != store.RunOK {
			t.Fatalf("%s: %+v", k, got)
		}
		n := 0
		for _, m := range h.transcript(k) {
			if m.Entry.Type == transcript.TypeCompaction {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: %d compactions, want 1", k, n)
		}
	}
	if peak > limit || peak == 0 {
		t.Errorf("peak concurrent summary calls = %d, limit %d", peak, limit)
	}
}

// TestCompactPreservesRecentTurns: with RecentTurnsPreserve, the last turns
// stay verbatim even when KeepRecentTokens alone would summarise them, and
// MaxActiveBytes compacts before a run whose visible transcript is large
// although its token estimate is far from the window.
func TestCompactPreservesRecentTurns(t *testing.T) {
	for _, turns := range []int{0, 2} {
		t.Run(fmt.Sprintf("preserve %d", turns), func(t *testing.T) {
			h := newHarness(t, summariser(func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
				return textReply(strings.Repeat("a", 4000)), nil
			}), func(c *Config) {
				c.Models = windowModels{c.Models.(staticModels).p, 100000}
				c.Compaction = CompactionConfig{KeepRecentTokens: 100, RecentTurnsPreserve: turns}
			})
			for i := range 4 {
				id := fmt.Sprintf("run-%d", i)
				h.submit(Input{RunID: id, Message: fmt.Sprintf("ask %d", i)})
				if got := h.wait(id); got.Status != store.RunOK {
					t.Fatalf("%s = %+v", id, got)
				}
			}
			res, err := h.runner.Compact(context.Background(), "agent:main:main", "")
			if err != nil || !res.Compacted {
				t.Fatalf("Compact = %+v, %v", res, err)
			}
			// Each turn is a user message and a reply; KeepRecentTokens
			// alone keeps only the last reply.
			want := map[int]int{0: 1, 2: 4}[turns]
			if res.Kept != want {
				t.Errorf("kept %d entries, want %d", res.Kept, want)
			}
		})
	}

	t.Run("max active bytes", func(t *testing.T) {
		summaries := 0
		var mu sync.Mutex
		h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
			if req.System == compaction.SystemPrompt {
				mu.Lock()
				summaries++
				mu.Unlock()
			}
			return summariser(func(context.Context, *provider.Request) ([]provider.Event, error) {
				return textReply(strings.Repeat("b", 3000)), nil
			})(ctx, req)
		}, func(c *Config) {
			c.Models = windowModels{c.Models.(staticModels).p, 1000000}
			c.Compaction = CompactionConfig{KeepRecentTokens: 100, MaxActiveBytes: 10000}
		})
		for i := range 5 {
			id := fmt.Sprintf("run-%d", i)
			h.submit(Input{RunID: id, Message: fmt.Sprintf("ask %d", i)})
			if got := h.wait(id); got.Status != store.RunOK {
				t.Fatalf("%s = %+v", id, got)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if summaries == 0 {
			t.Error("a 15 kB transcript over MaxActiveBytes 10000 was never compacted")
		}
	})
}

// refModels resolves "broken/…" to a provider that always fails and any
// other ref to the harness provider.
type refModels struct {
	p, broken provider.Provider
	window    int
}

func (m refModels) ResolveModel(agentID, ref string) (Model, error) {
	if strings.HasPrefix(ref, "broken/") {
		return Model{Provider: m.broken, ProviderID: "broken", ModelID: "x", ContextWindow: m.window}, nil
	}
	if strings.HasPrefix(ref, "ghost/") {
		return Model{}, fmt.Errorf("unknown model %q: %w", ref, provider.ErrUnknownModel)
	}
	return Model{Provider: m.p, ProviderID: "fake", ModelID: "fake-1", ContextWindow: m.window}, nil
}

// TestCompactionModelFallsBack: a compaction model that fails (or does not
// resolve) hands the summary to the session's own model.
func TestCompactionModelFallsBack(t *testing.T) {
	for _, ref := range []string{"broken/x", "ghost/x"} {
		t.Run(ref, func(t *testing.T) {
			brokenCalls := 0
			h := newHarness(t, summariser(func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
				return textReply(strings.Repeat("a", 4000)), nil
			}), func(c *Config) {
				broken := &fakeProvider{fn: func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
					brokenCalls++
					return nil, &provider.Error{Provider: "broken", StatusCode: 503, Message: "overloaded"}
				}}
				c.Models = refModels{p: c.Models.(staticModels).p, broken: broken, window: 100000}
				c.Compaction = CompactionConfig{KeepRecentTokens: 100, Model: ref}
			})
			for i := range 3 {
				id := fmt.Sprintf("run-%d", i)
				h.submit(Input{RunID: id, Message: fmt.Sprintf("ask %d", i)})
				if got := h.wait(id); got.Status != store.RunOK {
					t.Fatalf("%s = %+v", id, got)
				}
			}
			res, err := h.runner.Compact(context.Background(), "agent:main:main", "")
			if err != nil || !res.Compacted {
				t.Fatalf("Compact = %+v, %v", res, err)
			}
			if ref == "broken/x" && brokenCalls == 0 {
				t.Error("the compaction model was never tried")
			}
		})
	}
}
