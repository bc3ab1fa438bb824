package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// TestRelayedRunsTranslatedOnlyWhenWanted: the events of a run executing
// on another node are translated only while a connection here receives
// its session. Before, nothing of the run is kept; a scoped client that
// subscribes mid-run gets the rest, the model turn's text whole in its
// first delta, and the final once.
func TestRelayedRunsTranslatedOnlyWhenWanted(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.connectCaps([]string{wire.CapSessionScopedEvents})
	const key = "agent:main:far"
	if e.gw.wantsRelayed(key, "far-1") {
		t.Fatal("a relayed run wanted with no connection receiving its session")
	}
	relay := func(ev agent.Event) {
		ev.RunID, ev.SessionKey, ev.Time = "far-1", key, time.Now()
		e.runner.Relay(ev)
	}
	relay(agent.Event{Seq: 1, Stream: agent.StreamLifecycle, Phase: agent.PhaseStart})
	relay(agent.Event{Seq: 2, Stream: agent.StreamLifecycle, Phase: agent.PhaseModel})
	relay(agent.Event{Seq: 3, Stream: agent.StreamAssistant, Text: "hel", Delta: "hel"})
	e.gw.runsMu.Lock()
	_, kept := e.gw.runs["far-1"]
	e.gw.runsMu.Unlock()
	if kept {
		t.Fatal("an unwanted relayed run was translated (its state kept)")
	}

	c.ok(wire.MethodSessionsMessagesSubscribe, map[string]any{"key": key}, nil)
	if !e.gw.wantsRelayed(key, "far-1") || e.gw.wantsRelayed("agent:main:elsewhere", "far-2") {
		t.Fatal("wantsRelayed does not follow the subscription")
	}
	relay(agent.Event{Seq: 4, Stream: agent.StreamAssistant, Text: "hello", Delta: "lo"})
	reply := &transcript.Message{Role: transcript.RoleAssistant, Content: transcript.StringContent("hello")}
	relay(agent.Event{Seq: 5, Stream: agent.StreamLifecycle, Phase: agent.PhaseEnd, Message: reply,
		Run: &store.Run{RunID: "far-1", SessionKey: key, Status: store.RunOK, StopReason: "stop"}})
	var text strings.Builder
	finals := 0
	for _, f := range c.runEvents("far-1") {
		p := payload(t, f)
		if f.Event == wire.EventAgent {
			if d, _ := p["data"].(map[string]any); p["stream"] == "lifecycle" && d["phase"] == "start" {
				t.Errorf("got the start, relayed before the subscription: %v", p)
			}
			continue
		}
		switch p["state"] {
		case wire.ChatStateDelta:
			d, _ := p["deltaText"].(string)
			text.WriteString(d)
		case wire.ChatStateFinal:
			finals++
		}
	}
	if text.String() != "hello" || finals != 1 {
		t.Fatalf("subscriber got the text %q and %d finals, want %q and 1", text.String(), finals, "hello")
	}

	// An unscoped client receives every session: every run is wanted.
	e.operator()
	if !e.gw.wantsRelayed("agent:main:elsewhere", "far-2") {
		t.Fatal("not wanted with an unscoped client connected")
	}
}
