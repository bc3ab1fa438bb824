package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// uiClient connects as an interactive (non-ephemeral) client, which
// presence tracks.
func (e *env) uiClient() *client {
	e.t.Helper()
	c := e.dial()
	c.expectEvent(wire.EventConnectChallenge)
	p := connectParams(testToken, wire.ScopeRead, wire.ScopeWrite)
	p["client"] = map[string]any{"id": "webchat-ui", "version": "test", "platform": "linux", "mode": "webchat"}
	if f := c.call(wire.MethodConnect, p); !f.OK {
		e.t.Fatalf("connect: %v", f.Error)
	}
	return c
}

func TestPresence(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.uiClient()
	a.expectEvent(wire.EventPresence) // its own arrival
	// CLI connections are ephemeral: not listed, not announced.
	cli := e.operator()
	cli.close()
	var list []map[string]any
	a.ok(wire.MethodSystemPresence, nil, &list)
	if len(list) != 2 || list[0]["reason"] != "self" || list[0]["mode"] != "gateway" || list[1]["reason"] != "connect" {
		t.Fatalf("presence with one client = %v", list)
	}
	// A second client joining is announced to the first, and leaving too.
	b := e.uiClient()
	ev := a.expectEvent(wire.EventPresence)
	if n := len(payload(t, ev)["presence"].([]any)); n != 3 {
		t.Errorf("presence event after join lists %d entries, want 3", n)
	}
	b.close()
	ev = a.expectEvent(wire.EventPresence)
	if n := len(payload(t, ev)["presence"].([]any)); n != 2 {
		t.Errorf("presence event after leave lists %d entries, want 2", n)
	}
	// hello-ok carries the list and the capability.
	c := e.dial()
	res := c.call(wire.MethodConnect, connectParams(testToken, wire.ScopeRead))
	var hello wire.HelloOK
	if err := json.Unmarshal(res.Payload, &hello); err != nil {
		t.Fatal(err)
	}
	if len(hello.Snapshot.Presence) < 2 || !strings.Contains(strings.Join(hello.Features.Capabilities, ","), wire.CapPublishedModelCatalog) {
		t.Errorf("hello presence %d entries, capabilities %v", len(hello.Snapshot.Presence), hello.Features.Capabilities)
	}
}

func TestOperatorMethods(t *testing.T) {
	e := newEnv(t, envOptions{gateway: func(c *Config) {
		c.Catalog = func() []CatalogModel {
			return []CatalogModel{
				{ID: "gpt-x", Provider: "openai", ContextWindow: 128000, Reasoning: true, Available: false, UnavailableReason: "missing-auth"},
				{ID: "echo-1", Name: "Offline", Provider: "scripted", Default: true, Available: true},
			}
		}
	}})
	c := e.operator()
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "hi", "idempotencyKey": "op-1"}, nil)
	c.runEvents("op-1")

	var hb json.RawMessage
	c.ok(wire.MethodLastHeartbeat, nil, &hb)
	if string(hb) != "null" {
		t.Errorf("last-heartbeat = %s", hb)
	}
	var us map[string]any
	c.ok(wire.MethodUsageStatus, nil, &us)
	if p, ok := us["providers"].([]any); !ok || len(p) != 0 || us["updatedAt"] == nil {
		t.Errorf("usage.status = %v", us)
	}

	var models struct {
		Models []map[string]any `json:"models"`
	}
	c.ok(wire.MethodModelsList, map[string]any{"view": "all", "includeDetails": true}, &models)
	if len(models.Models) != 2 {
		t.Fatalf("models.list = %v", models)
	}
	gx, echo := models.Models[0], models.Models[1]
	if gx["id"] != "gpt-x" || gx["available"] != false || gx["unavailableReason"] != "missing-auth" || gx["contextWindow"] != float64(128000) {
		t.Errorf("gpt-x = %v", gx)
	}
	if echo["name"] != "Offline" || echo["tags"] == nil || len(echo["thinkingLevels"].([]any)) != 1 {
		t.Errorf("echo-1 = %v", echo)
	}
	c.ok(wire.MethodModelsList, map[string]any{"provider": "scripted"}, &models)
	if len(models.Models) != 1 {
		t.Errorf("provider filter: %v", models)
	}

	var health map[string]any
	c.ok(wire.MethodHealth, nil, &health)
	sess, _ := health["sessions"].(map[string]any)
	if health["ok"] != true || sess["count"] != float64(1) || len(sess["recent"].([]any)) != 1 || len(health["agents"].([]any)) != 1 {
		t.Errorf("health = %v", health)
	}
	var status map[string]any
	c.ok(wire.MethodStatus, nil, &status)
	if status["runtimeVersion"] != "test" || status["sessions"].(map[string]any)["count"] != float64(1) {
		t.Errorf("status = %v", status)
	}
	var cfg map[string]any
	c.ok(wire.MethodConfigGet, nil, &cfg)
	if cfg["valid"] != true || !strings.HasPrefix(cfg["hash"].(string), "sha256:") {
		t.Errorf("config.get = %v", cfg)
	}
	raw, _ := json.Marshal(cfg)
	if strings.Contains(string(raw), testToken) {
		t.Error("config.get leaks the gateway token")
	}
}

func TestUsageCost(t *testing.T) {
	now := time.Date(2026, 5, 10, 12, 0, 0, 0, time.Local)
	e := newEnv(t, envOptions{gateway: func(c *Config) { c.Now = func() time.Time { return now } }})
	ctx := context.Background()
	add := func(id string, ended time.Time, u transcript.Usage) {
		r := &store.Run{RunID: id, SessionKey: "agent:main:main", Status: store.RunOK, CreatedAt: ended.Add(-time.Second), StartedAt: ended.Add(-time.Second), EndedAt: ended, Usage: u}
		if err := e.store.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	add("r1", now.Add(-time.Hour), transcript.Usage{Input: 100, Output: 50, TotalTokens: 150, Cost: &transcript.Cost{Input: 1, Output: 2, Total: 3}})
	add("r2", now.AddDate(0, 0, -2), transcript.Usage{Input: 10, Output: 5, TotalTokens: 15})
	add("r3", now.AddDate(0, 0, -40), transcript.Usage{Input: 999, TotalTokens: 999}) // outside 30 days

	c := e.operator()
	var res struct {
		Days   int                        `json:"days"`
		Daily  []map[string]any           `json:"daily"`
		Totals map[string]float64         `json:"totals"`
		Extra  map[string]json.RawMessage `json:"-"`
	}
	c.ok(wire.MethodUsageCost, map[string]any{}, &res)
	if res.Days != 30 || len(res.Daily) != 30 {
		t.Fatalf("days = %d, daily = %d", res.Days, len(res.Daily))
	}
	if res.Totals["totalTokens"] != 165 || res.Totals["totalCost"] != 3 || res.Totals["missingCostEntries"] != 1 {
		t.Errorf("totals = %v", res.Totals)
	}
	last := res.Daily[29]
	if last["date"] != "2026-05-10" || last["totalTokens"] != float64(150) {
		t.Errorf("today = %v", last)
	}
	c.ok(wire.MethodUsageCost, map[string]any{"days": 7}, &res)
	if res.Days != 7 || res.Totals["totalTokens"] != 165 {
		t.Errorf("7 days: %d %v", res.Days, res.Totals)
	}
	c.ok(wire.MethodUsageCost, map[string]any{"startDate": "2026-05-08", "endDate": "2026-05-08"}, &res)
	if res.Days != 1 || res.Totals["totalTokens"] != 15 {
		t.Errorf("one day: %d %v", res.Days, res.Totals)
	}
	if err := c.fail(wire.MethodUsageCost, map[string]any{"startDate": "May 8"}); err.Code != wire.CodeInvalidRequest {
		t.Errorf("bad date: %+v", err)
	}

	var su map[string]any
	c.ok(wire.MethodSessionsUsage, nil, &su)
	if su["startDate"] == nil || su["totals"] == nil {
		t.Errorf("sessions.usage = %v", su)
	}
}
