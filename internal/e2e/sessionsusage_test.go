package e2e

import (
	"encoding/json"
	"testing"
)

// TestSessionsUsageCounts: after runs with tool calls, sessions.usage
// reports the session's messages by role, its tool calls by tool name,
// tool results and errors (an unknown tool's result is an error), and
// per-day totals, in the reference's shapes, for the session and in the
// aggregates; the day's tokens are the session's.
func TestSessionsUsageCounts(t *testing.T) {
	g := startModel(t, "", nil, `{ id: "fake-1" }`, "", "")
	c := g.dial(t)
	for _, run := range []struct{ id, msg string }{
		{"u1", "/tool sessions_list {}\n/tool sessions_list {\"limit\": 1}\n/tool agents_list {}\n/then done"},
		{"u2", "/tool no_such_tool {}\n/step\n/tool sessions_list {}\n/then done again"},
	} {
		call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": run.msg, "idempotencyKey": run.id})
		if w := call(t, c, "agent.wait", map[string]any{"runId": run.id, "timeoutMs": 20000}); w["status"] != "ok" {
			t.Fatalf("run %s = %v", run.id, w)
		}
	}
	res := call(t, c, "sessions.usage", map[string]any{})
	var got struct {
		Sessions []struct {
			Key   string
			Usage struct {
				MessageCounts map[string]int64
				ToolUsage     struct {
					TotalCalls, UniqueTools int64
					Tools                   []map[string]any
				}
				DailyMessageCounts []map[string]any
				DailyBreakdown     []map[string]any
				ActivityDates      []string
				TotalTokens        int64
			}
		}
		Aggregates struct {
			SessionCount int
			Messages     map[string]int64
			Tools        struct {
				TotalCalls, UniqueTools int64
				Tools                   []map[string]any
			}
			Daily []map[string]any
		}
	}
	b, _ := json.Marshal(res)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	// u1: user, assistant with 3 calls, 3 results, assistant "done".
	// u2: user, assistant with 1 call, its error result, assistant with 1
	// call, its result, assistant "done again".
	wantCounts := map[string]int64{"total": 7, "user": 2, "assistant": 5, "toolCalls": 5, "toolResults": 5, "errors": 1}
	wantTools := `[{"count":3,"name":"sessions_list"},{"count":1,"name":"agents_list"},{"count":1,"name":"no_such_tool"}]`
	if len(got.Sessions) != 1 || got.Sessions[0].Key != "agent:main:main" {
		t.Fatalf("sessions = %s", b)
	}
	u := got.Sessions[0].Usage
	tools, _ := json.Marshal(u.ToolUsage.Tools)
	if !sameCounts(u.MessageCounts, wantCounts) || string(tools) != wantTools || u.ToolUsage.TotalCalls != 5 || u.ToolUsage.UniqueTools != 3 {
		t.Errorf("session usage: messages %v, tools %s (%d calls, %d unique)\nwant %v, %s", u.MessageCounts, tools, u.ToolUsage.TotalCalls, u.ToolUsage.UniqueTools, wantCounts, wantTools)
	}
	if len(u.ActivityDates) != 1 || len(u.DailyMessageCounts) != 1 || len(u.DailyBreakdown) != 1 ||
		u.DailyMessageCounts[0]["toolCalls"] != 5.0 || u.DailyMessageCounts[0]["total"] != 7.0 ||
		u.TotalTokens <= 0 || u.DailyBreakdown[0]["tokens"] != float64(u.TotalTokens) {
		t.Errorf("session days: %v %v %v (total tokens %d)", u.ActivityDates, u.DailyMessageCounts, u.DailyBreakdown, u.TotalTokens)
	}
	a := got.Aggregates
	tools, _ = json.Marshal(a.Tools.Tools)
	if a.SessionCount != 1 || !sameCounts(a.Messages, wantCounts) || string(tools) != wantTools || a.Tools.TotalCalls != 5 || a.Tools.UniqueTools != 3 {
		t.Errorf("aggregates: %d sessions, messages %v, tools %s", a.SessionCount, a.Messages, tools)
	}
	if len(a.Daily) != 1 || a.Daily[0]["messages"] != 7.0 || a.Daily[0]["toolCalls"] != 5.0 || a.Daily[0]["errors"] != 1.0 ||
		a.Daily[0]["tokens"] != float64(u.TotalTokens) || a.Daily[0]["date"] != u.ActivityDates[0] {
		t.Errorf("aggregates.daily = %v", a.Daily)
	}
}

func sameCounts(got, want map[string]int64) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}
