package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/provider"
)

// relayedRunEvents collects the chat and agent events a client receives, by run.
type relayedRunEvents struct {
	mu     sync.Mutex
	chat   map[string][]map[string]any
	agent  map[string][]map[string]any
	notify chan struct{}
}

func collectRelayed(c *client.Client) *relayedRunEvents {
	r := &relayedRunEvents{chat: map[string][]map[string]any{}, agent: map[string][]map[string]any{}, notify: make(chan struct{}, 1)}
	evs := c.Events()
	go func() {
		for ev := range evs {
			var p map[string]any
			if json.Unmarshal(ev.Payload, &p) != nil {
				continue
			}
			id, _ := p["runId"].(string)
			r.mu.Lock()
			switch ev.Event {
			case "chat":
				r.chat[id] = append(r.chat[id], p)
			case "agent":
				r.agent[id] = append(r.agent[id], p)
			}
			r.mu.Unlock()
			select {
			case r.notify <- struct{}{}:
			default:
			}
		}
	}()
	return r
}

// finals counts the run's chat events of state final.
func (r *relayedRunEvents) finals(runID string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, p := range r.chat[runID] {
		if p["state"] == "final" {
			n++
		}
	}
	return n
}

// waitFinal waits for the run's first final chat event.
func (r *relayedRunEvents) waitFinal(t *testing.T, runID string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for r.finals(runID) == 0 {
		select {
		case <-r.notify:
		case <-deadline:
			t.Fatalf("no final chat event for %s", runID)
		}
	}
}

func (g *gateway) dialScoped(t *testing.T) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{URL: g.url, Token: token, SessionScoped: true})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestClusterMidRunSubscriber: node 1 has only a session-scoped client,
// so it decodes none of the events of node 0's runs it does not follow.
// The client subscribes to a session while its run on node 0 waits
// between two model steps: it gets the rest of the run (the second step's
// text whole, once) and the final exactly once, and agent.wait on node 1
// answers for the run.
func TestClusterMidRunSubscriber(t *testing.T) {
	reached := make(chan struct{}, 1)
	gate := make(chan struct{})
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key", OnRequest: func(r *http.Request, req *provider.Request) {
		// The second step of the gated turn (the tool's result is in)
		// waits for the test.
		n := len(req.Messages)
		if n < 2 || req.Messages[n-1].Role != provider.RoleTool {
			return
		}
		for _, m := range req.Messages {
			if m.Role == provider.RoleUser && strings.HasPrefix(m.Text, "GATE") {
				select {
				case reached <- struct{}{}:
				default:
				}
				select {
				case <-gate:
				case <-r.Context().Done():
				}
				return
			}
		}
	}})
	_, nodes := startCluster(t, 2, llm, "")
	a, b := nodes[0].dialScoped(t), nodes[1].dialScoped(t)
	onB := collectRelayed(b)
	const key, barrier = "agent:main:midrun", "agent:main:barrier"

	call(t, a, "chat.send", map[string]any{"sessionKey": key, "idempotencyKey": "mid1",
		"message": "GATE\n/reply first part\n/tool sessions_list {}\n/then second part"})
	select {
	case <-reached:
	case <-time.After(20 * time.Second):
		t.Fatal("the run never reached its second step")
	}
	// Node 0 relays in order: once node 1 delivered the final of a run
	// that node 0 ran after mid1's first step, node 1 has read that step.
	call(t, b, "sessions.messages.subscribe", map[string]any{"key": barrier})
	call(t, a, "chat.send", map[string]any{"sessionKey": barrier, "idempotencyKey": "bar1", "message": "/reply ok"})
	onB.waitFinal(t, "bar1")
	// The gate opens right after the subscription: the run may end before
	// node 0 heard that node 1 wants the session; node 1 holds the run's
	// end until node 0 acknowledged the want, after sending the events
	// node 1 missed.
	call(t, b, "sessions.messages.subscribe", map[string]any{"key": key})
	close(gate)

	if w := call(t, b, "agent.wait", map[string]any{"runId": "mid1", "timeoutMs": 20000}); w["status"] != "ok" {
		t.Fatalf("agent.wait on node 1 for node 0's run = %v", w)
	}
	onB.waitFinal(t, "mid1")
	// A second run of the session, after mid1: once its final is in, a
	// second final of mid1 would have come before it.
	call(t, a, "chat.send", map[string]any{"sessionKey": key, "idempotencyKey": "mid2", "message": "/reply again"})
	onB.waitFinal(t, "mid2")
	if w := call(t, b, "agent.wait", map[string]any{"runId": "mid2", "timeoutMs": 20000}); w["status"] != "ok" {
		t.Fatalf("agent.wait on node 1 for mid2 = %v", w)
	}

	onB.mu.Lock()
	defer onB.mu.Unlock()
	var text strings.Builder
	finals := 0
	for _, p := range onB.chat["mid1"] {
		switch p["state"] {
		case "delta":
			d, _ := p["deltaText"].(string)
			text.WriteString(d)
		case "final":
			finals++
			if b, _ := json.Marshal(p["message"]); !strings.Contains(string(b), "second part") {
				t.Errorf("final of mid1 = %s", b)
			}
		default:
			t.Errorf("chat event of mid1 on node 1: %v", p)
		}
	}
	if finals != 1 {
		t.Errorf("node 1's subscriber got %d finals of mid1, want 1", finals)
	}
	if text.Len() > 0 && text.String() != "second part" {
		t.Errorf("node 1's subscriber got the deltas %q, want the second step's text whole once", text.String())
	}
	var agentText strings.Builder
	ends, last := 0, 0.0
	for _, p := range onB.agent["mid1"] {
		seq, _ := p["seq"].(float64)
		if seq <= last {
			t.Errorf("agent events of mid1 out of order: %v after seq %v", p, last)
		}
		last = seq
		data, _ := p["data"].(map[string]any)
		switch p["stream"] {
		case "assistant":
			d, _ := data["delta"].(string)
			agentText.WriteString(d)
		case "lifecycle":
			if data["phase"] == "end" {
				ends++
			}
			if data["phase"] == "start" {
				t.Errorf("node 1's subscriber got mid1's start, from before it subscribed: %v", p)
			}
		case "tool":
			t.Errorf("node 1's subscriber got mid1's tool event, from before it subscribed: %v", p)
		}
	}
	if ends != 1 || agentText.String() != "second part" {
		t.Errorf("node 1's agent events of mid1: %d ends, text %q; want 1 and the second step's", ends, agentText.String())
	}
	if n := len(onB.chat["bar1"]) + len(onB.chat["mid2"]); n < 2 {
		t.Errorf("node 1's subscriber got %d chat events of the later runs", n)
	}
}

// watchRun follows runID on g with runs.watch from afterSeq, on a
// connection of its own, and returns the events it got ("seq:stream")
// and the final's status and text.
func watchRun(t *testing.T, g *gateway, runID string, afterSeq float64) (evs []string, status, text string) {
	t.Helper()
	c := g.dialScoped(t)
	frames := c.Events()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var res map[string]any
	if err := c.Call(ctx, "runs.watch", map[string]any{"runId": runID, "afterSeq": afterSeq, "timeoutMs": 20000}, &res); err != nil {
		t.Fatalf("runs.watch %s after %v: %v", runID, afterSeq, err)
	}
	// The events came before the answer; the frames channel has them.
	for {
		select {
		case ev := <-frames:
			if ev.Event != "runs.watch" {
				continue
			}
			var p map[string]any
			if json.Unmarshal(ev.Payload, &p) != nil || p["runId"] != runID {
				continue
			}
			evs = append(evs, fmt.Sprintf("%v:%v", p["seq"], p["stream"]))
			continue
		default:
		}
		break
	}
	status, _ = res["status"].(string)
	text, _ = res["text"].(string)
	return evs, status, text
}

// TestClusterWatchRunThatEndedElsewhere: node 1 has only a session-scoped
// client that never subscribed to the session, so of node 0's run it got
// only the final. A runs.watch there after the run ended, from the start
// or from any sequence number, gets the events after it as on node 0,
// then the final.
func TestClusterWatchRunThatEndedElsewhere(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	_, nodes := startCluster(t, 2, llm, "")
	a, b := nodes[0].dialScoped(t), nodes[1].dialScoped(t)
	onA := collectRelayed(a)
	const key = "agent:main:ended"
	call(t, a, "chat.send", map[string]any{"sessionKey": key, "idempotencyKey": "end1",
		"message": "/reply first part\n/tool sessions_list {}\n/then second part"})
	onA.waitFinal(t, "end1")
	if w := call(t, b, "agent.wait", map[string]any{"runId": "end1", "timeoutMs": 20000}); w["status"] != "ok" {
		t.Fatalf("agent.wait on node 1 = %v", w)
	}

	want, status, text := watchRun(t, nodes[0], "end1", 0)
	if status != "ok" || !strings.Contains(text, "second part") || len(want) < 4 {
		t.Fatalf("runs.watch on node 0: %v, %s %q", want, status, text)
	}
	for i := -1; i < len(want); i++ {
		after := 0.0
		if i >= 0 {
			fmt.Sscanf(want[i], "%g:", &after)
		}
		got, st, tx := watchRun(t, nodes[1], "end1", after)
		if st != "ok" || tx != text {
			t.Errorf("runs.watch on node 1 after %v: final %s %q, want ok %q", after, st, tx, text)
		}
		if !slices.Equal(got, want[i+1:]) {
			t.Errorf("runs.watch on node 1 after %v:\n%v\nwant as on node 0:\n%v", after, got, want[i+1:])
		}
	}
}
