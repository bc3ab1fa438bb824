package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/store"
)

func TestSessionsEdges(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	now := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	from := func(src, tool string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"message": "m", "provenance": map[string]any{"kind": "inter_session", "sourceSessionKey": src, "sourceTool": tool}})
		return b
	}
	person := json.RawMessage(`{"message":"hello"}`)
	for i, r := range []*store.Run{
		{RunID: "ask", SessionKey: "agent:main:b", Status: store.RunOK, Input: from("agent:main:a", "sessions_send"), EndedAt: now.Add(time.Second)},
		{RunID: "mine", SessionKey: "agent:main:b", Status: store.RunOK, Input: person},
		{RunID: "announce", SessionKey: "agent:main:a", Status: store.RunQueued, Input: from("agent:main:subagent:c", "subagent_announce")},
		{RunID: "broken", SessionKey: "agent:main:a", Status: store.RunError, Error: "model down", Input: from("agent:main:b", "sessions_send")},
		{RunID: "elsewhere", SessionKey: "agent:main:z", Status: store.RunRunning, Input: from("agent:main:a", "sessions_send")},
		{RunID: "batch", SessionKey: "agent:main:a", Status: store.RunOK, Input: json.RawMessage(`{"message":"m","provenance":{"kind":"inter_session",` +
			`"sourceSessionKey":"agent:main:subagent:d","sourceSessionKeys":["agent:main:subagent:d","agent:main:subagent:e"],"sourceTool":"subagent_announce"}}`)},
	} {
		r.AgentID, r.CreatedAt = "main", now.Add(time.Duration(i)*time.Millisecond)
		if err := e.store.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	c := e.connect(wire.ScopeRead)
	var res wire.SessionsEdgesResult
	c.ok(wire.MethodSessionsEdges, map[string]any{"keys": []string{"agent:main:a", "agent:main:b"}}, &res)
	var got []string
	for _, ed := range res.Edges {
		got = append(got, ed.RunID+" "+ed.From+"→"+ed.To+" "+ed.Via+" "+ed.Status+" "+ed.Error)
	}
	want := []string{ // newest first; a person's turn and sessions not asked for are left out
		// A batch of announces is an edge from each child.
		"batch agent:main:subagent:d→agent:main:a subagent_announce replied ",
		"batch agent:main:subagent:e→agent:main:a subagent_announce replied ",
		"broken agent:main:b→agent:main:a sessions_send failed model down",
		"announce agent:main:subagent:c→agent:main:a subagent_announce queued ",
		"ask agent:main:a→agent:main:b sessions_send replied ",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("edges (-want +got):\n%s", diff)
	}
	if res.Edges[4].EndedAt != now.Add(time.Second).UnixMilli() || res.Edges[4].CreatedAt != now.UnixMilli() {
		t.Errorf("edge times = %+v", res.Edges[4])
	}
	c.ok(wire.MethodSessionsEdges, map[string]any{"keys": []string{"agent:main:a", "agent:main:b"}, "limit": 1}, &res)
	if len(res.Edges) != 1 || res.Edges[0].RunID != "batch" {
		t.Errorf("limit 1 = %+v", res.Edges)
	}
	for _, bad := range []map[string]any{{}, {"keys": "agent:main:a"}, {"keys": []string{"a"}, "limit": 0}, {"keys": []string{"a"}, "extra": 1}} {
		if err := c.fail(wire.MethodSessionsEdges, bad); err.Code != wire.CodeInvalidRequest {
			t.Errorf("%v: %+v", bad, err)
		}
	}
	many := make([]string, wire.MaxEdgeKeys+1)
	for i := range many {
		many[i] = "agent:main:k" + strings.Repeat("x", i%3)
	}
	if err := c.fail(wire.MethodSessionsEdges, map[string]any{"keys": many}); err.Code != wire.CodeInvalidRequest || !strings.Contains(err.Message, "at most") {
		t.Errorf("too many keys: %+v", err)
	}
}
