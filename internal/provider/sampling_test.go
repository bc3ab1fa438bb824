package provider

import "testing"

func TestCapMaxTokens(t *testing.T) {
	tests := []struct {
		name       string
		s          *Sampling
		configured int
		want       int
	}{
		{"no sampling", nil, 1000, 1000},
		{"no caller cap", &Sampling{}, 1000, 1000},
		{"caller lower", &Sampling{MaxTokens: 50}, 1000, 50},
		{"configured lower", &Sampling{MaxTokens: 5000}, 1000, 1000},
		{"nothing configured", &Sampling{MaxTokens: 50}, 0, 50},
		{"neither", nil, 0, 0},
	}
	for _, tt := range tests {
		if got := tt.s.CapMaxTokens(tt.configured); got != tt.want {
			t.Errorf("%s: CapMaxTokens(%d) = %d, want %d", tt.name, tt.configured, got, tt.want)
		}
	}
}
