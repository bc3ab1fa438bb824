package gateway

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// TestModelsSnapshot: the reference's Control UI, connecting with the
// model-catalog-snapshot capability and a modelCatalog scope, gets the
// model catalogue as a models.snapshot event right after hello-ok, as
// models.list answers it; other clients get none.
func TestModelsSnapshot(t *testing.T) {
	e := newEnv(t, envOptions{gateway: func(c *Config) {
		c.Catalog = func() []CatalogModel {
			return []CatalogModel{{Provider: "fake", ID: "fake-1", Name: "Fake", Available: true, Default: true, ContextWindow: 1000}}
		}
	}})
	connect := func(id string, caps []string, catalog any) *client {
		t.Helper()
		c := e.dial()
		c.expectEvent(wire.EventConnectChallenge)
		p := connectParams(testToken, wire.ScopeRead, wire.ScopeWrite)
		p["client"] = map[string]any{"id": id, "version": "test", "platform": "linux", "mode": "webchat"}
		p["caps"] = caps
		if catalog != nil {
			p["modelCatalog"] = catalog
		}
		if res := c.call(wire.MethodConnect, p); !res.OK {
			t.Fatalf("connect: %+v", res.Error)
		}
		return c
	}
	var list map[string]any
	e.operator().ok(wire.MethodModelsList, map[string]any{}, &list)

	for _, tc := range []struct {
		name      string
		target    any
		wantScope map[string]any
	}{
		{"session", map[string]any{"sessionKey": "main"}, map[string]any{"sessionKey": "main"}},
		{"agent", map[string]any{"agentId": "main"}, map[string]any{"agentId": "main"}},
		{"unknown agent", map[string]any{"agentId": "ghost"}, map[string]any{"agentId": "main"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := connect(wire.ClientIDControlUI, []string{"tool-events", wire.CapModelCatalogSnapshot}, tc.target)
			var got map[string]any
			if err := json.Unmarshal(c.expectEvent(wire.EventModelsSnapshot).Payload, &got); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"target": tc.target, "scope": tc.wantScope, "catalog": list}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("models.snapshot (-want +got):\n%s", diff)
			}
		})
	}

	// Without the capability, or from another client, nothing comes: by
	// the time the connect-time health event and a call's answer are in,
	// a snapshot would have been too.
	for _, c := range []*client{
		connect(wire.ClientIDControlUI, []string{}, map[string]any{"sessionKey": "main"}),
		connect("webchat-ui", []string{wire.CapModelCatalogSnapshot}, map[string]any{"sessionKey": "main"}),
	} {
		c.expectEvent(wire.EventHealth)
		c.ok(wire.MethodModelsList, map[string]any{}, nil)
		c.mu.Lock()
		for _, f := range c.log {
			if f.Event == wire.EventModelsSnapshot {
				t.Errorf("unasked models.snapshot: %s", f.Payload)
			}
		}
		c.mu.Unlock()
	}
}
