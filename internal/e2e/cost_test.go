package e2e

import (
	"math"
	"testing"
)

// TestRunCostFromModelPrice: a model with a configured price
// (models.providers.<p>.models[].cost, per million tokens) gives each
// run a cost, which usage.cost sums.
func TestRunCostFromModelPrice(t *testing.T) {
	g := startModel(t, "", nil, `{ id: "fake-1", cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } }`, "", "")
	c := g.dial(t)
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "/usage 1000 2000 4000\npriced", "idempotencyKey": "priced"})
	if w := call(t, c, "agent.wait", map[string]any{"runId": "priced", "timeoutMs": 20000}); w["status"] != "ok" {
		t.Fatalf("run = %v", w)
	}
	res := call(t, c, "usage.cost", map[string]any{"days": 1})
	totals, _ := res["totals"].(map[string]any)
	// 1000×3 + 2000×15 + 4000×0.3 per million tokens.
	want := map[string]float64{"inputCost": 0.003, "outputCost": 0.03, "cacheReadCost": 0.0012, "totalCost": 0.0342}
	for k, v := range want {
		if got, _ := totals[k].(float64); math.Abs(got-v) > 1e-9 {
			t.Errorf("usage.cost totals.%s = %v, want %v (totals %v)", k, totals[k], v, totals)
		}
	}
}
