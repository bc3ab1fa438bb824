package wire

import (
	"encoding/json"
	"testing"
)

func TestChainOf(t *testing.T) {
	var round map[string]any
	_ = json.Unmarshal([]byte(`{"switchboard.chainId":"c1","switchboard.chainHops":3}`), &round)
	for _, tt := range []struct {
		name string
		meta map[string]any
		id   string
		hops int
		ok   bool
	}{
		{"built", ChainMetadata("c1", 2), "c1", 2, true},
		{"from JSON", round, "c1", 3, true},
		{"none", nil, "", 0, false},
		{"no hops", map[string]any{MetaChainID: "c1"}, "", 0, false},
		{"negative", map[string]any{MetaChainID: "c1", MetaChainHops: -1.0}, "", 0, false},
		{"fraction", map[string]any{MetaChainID: "c1", MetaChainHops: 1.5}, "", 0, false},
		{"id not a string", map[string]any{MetaChainID: 7.0, MetaChainHops: 1.0}, "", 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id, hops, ok := ChainOf(tt.meta)
			if id != tt.id || hops != tt.hops || ok != tt.ok {
				t.Fatalf("ChainOf = %q %d %v", id, hops, ok)
			}
		})
	}
}
