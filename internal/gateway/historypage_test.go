package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// TestChatHistoryPaging pages a session's history backward with the
// reference's offsets, anchors a page at a message, and follows the
// history cursor across a reset into the archived transcript.
func TestChatHistoryPaging(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	turn := func(id, msg string) {
		t.Helper()
		c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": msg, "idempotencyKey": id}, nil)
		var w map[string]any
		c.ok(wire.MethodAgentWait, map[string]any{"runId": id, "timeoutMs": 10000}, &w)
		if w["status"] != "ok" {
			t.Fatalf("%s: %v", id, w)
		}
	}
	for i := range 3 {
		turn(fmt.Sprintf("old-%d", i), fmt.Sprintf("old %d", i))
	}
	type row struct {
		Role string
		Meta struct {
			ID   string
			Seq  int64
			Kind string
		} `json:"__openclaw"`
		Content json.RawMessage
	}
	type page struct {
		SessionID         string
		Messages          []row
		Offset            *int
		NextOffset        int
		HasMore           *bool
		TotalMessages     *int
		NextHistoryCursor string
	}
	get := func(params map[string]any) page {
		t.Helper()
		params["sessionKey"] = "main"
		var p page
		c.ok(wire.MethodChatHistory, params, &p)
		return p
	}
	seqs := func(p page) (out []int64) {
		for _, m := range p.Messages {
			out = append(out, m.Meta.Seq)
		}
		return out
	}

	p := get(map[string]any{"limit": 4})
	oldID := p.SessionID
	if fmt.Sprint(seqs(p)) != "[3 4 5 6]" || *p.TotalMessages != 6 || !*p.HasMore || p.NextOffset != 4 || p.NextHistoryCursor != oldID+":3" {
		t.Fatalf("first page %+v seqs %v", p, seqs(p))
	}
	p = get(map[string]any{"limit": 4, "offset": 4})
	if fmt.Sprint(seqs(p)) != "[1 2]" || *p.HasMore || p.NextOffset != 0 || p.NextHistoryCursor != "" {
		t.Fatalf("second page %+v seqs %v", p, seqs(p))
	}
	first := get(map[string]any{"limit": 1, "offset": 5}).Messages[0]
	anchored := get(map[string]any{"limit": 2, "messageId": first.Meta.ID})
	if fmt.Sprint(seqs(anchored)) != "[1]" || anchored.HasMore != nil || anchored.Offset != nil {
		t.Errorf("anchored page %+v", anchored)
	}

	c.ok(wire.MethodSessionsReset, map[string]any{"key": "main"}, nil)
	turn("new-0", "new 0")
	p = get(map[string]any{"limit": 10})
	if p.SessionID == oldID || len(p.Messages) != 3 || p.Messages[0].Meta.Kind != "reset" || *p.HasMore {
		t.Fatalf("after reset %+v", p)
	}
	if p.NextHistoryCursor != oldID+":0" {
		t.Fatalf("cursor after reset = %q, want into %s", p.NextHistoryCursor, oldID)
	}
	back := get(map[string]any{"limit": 4, "historyCursor": p.NextHistoryCursor})
	if back.SessionID != oldID || fmt.Sprint(seqs(back)) != "[3 4 5 6]" || back.NextHistoryCursor != oldID+":3" {
		t.Fatalf("archived page %+v seqs %v", back, seqs(back))
	}
	back = get(map[string]any{"limit": 4, "historyCursor": back.NextHistoryCursor})
	if fmt.Sprint(seqs(back)) != "[1 2]" || back.NextHistoryCursor != "" {
		t.Fatalf("oldest page %+v seqs %v", back, seqs(back))
	}
	// An archived message can be anchored with its sessionId.
	old := get(map[string]any{"limit": 1, "sessionId": oldID, "messageId": first.Meta.ID})
	if old.SessionID != oldID || fmt.Sprint(seqs(old)) != "[1]" {
		t.Errorf("anchored archived page %+v", old)
	}

	// sessions.search finds text in the current and the archived
	// transcripts, newest first, in the reference's shape.
	var found wire.SessionsSearchResult
	c.ok(wire.MethodSessionsSearch, map[string]any{"query": "OLD 1", "sessionKeys": []string{"main"}}, &found)
	if len(found.Results) != 2 || found.Results[0].Role != "assistant" || found.Results[1].Role != "user" ||
		found.Results[1].SessionID != oldID || found.Results[1].SessionKey != "agent:main:main" || found.Results[1].Snippet != "old 1" ||
		found.Results[1].Score != 1 || found.Results[1].MessageID == "" || found.Results[1].Timestamp == 0 {
		t.Errorf("search old 1 = %+v", found)
	}
	c.ok(wire.MethodSessionsSearch, map[string]any{"query": "new 0", "limit": 1}, &found)
	if len(found.Results) != 1 || found.Results[0].SessionID == oldID || found.Results[0].Role != "assistant" {
		t.Errorf("search new 0 = %+v", found)
	}
	c.ok(wire.MethodSessionsSearch, map[string]any{"query": "old", "sessionKeys": []string{"nobody"}}, &found)
	if len(found.Results) != 0 {
		t.Errorf("search of a missing session = %+v", found)
	}
	if err := c.fail(wire.MethodSessionsSearch, map[string]any{"query": "x", "limit": 26}); err.Code != wire.CodeInvalidRequest {
		t.Errorf("limit 26: %+v", err)
	}
	if long := excerptAround(strings.Repeat("a", 300)+"needle"+strings.Repeat("b", 300), 300, 6); !strings.Contains(long, "needle") || len(long) > searchExcerpt+8 {
		t.Errorf("excerpt %q", long)
	}

	for _, bad := range []map[string]any{
		{"sessionId": "someone-elses"},
		{"historyCursor": "no-colon"},
		{"historyCursor": "someone-elses:3"},
		{"messageId": "no-such-entry"},
	} {
		bad["sessionKey"] = "main"
		if err := c.fail(wire.MethodChatHistory, bad); err.Code != wire.CodeInvalidRequest {
			t.Errorf("%v: %+v", bad, err)
		}
	}
}
