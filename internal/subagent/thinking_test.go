package subagent

import (
	"errors"
	"strings"
	"testing"
)

func TestNormalizeThinking(t *testing.T) {
	tests := []struct {
		raw, want string
	}{
		{"", ""},
		{"   ", ""},
		{"off", "off"},
		{"OFF", "off"},
		{" off ", "off"},
		{"on", "low"},
		{"enable", "low"},
		{"enabled", "low"},
		{"low", "low"},
		{"thinkhard", "low"},
		{"think-hard", "low"}, // in the low and the high list; low is checked first
		{"think_hard", "low"},
		{"min", "minimal"},
		{"minimal", "minimal"},
		{"think", "minimal"},
		{"mid", "medium"},
		{"med", "medium"},
		{"medium", "medium"},
		{"thinkharder", "medium"},
		{"think-harder", "medium"},
		{"harder", "medium"},
		{"high", "high"},
		{"ultra", "high"},
		{"ultrathink", "high"},
		{"thinkhardest", "high"},
		{"highest", "high"},
		{"max", "high"},
		{"Max", "high"},
		{"xhigh", "xhigh"},
		{"x-high", "xhigh"},
		{"x_high", "xhigh"},
		{"X High", "xhigh"},
		{"extrahigh", "xhigh"},
		{"extra-high", "xhigh"},
		{"adaptive", "adaptive"},
		{"auto", "adaptive"},
		{"AUTO", "adaptive"},
		{"a-d_a ptive", "adaptive"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := NormalizeThinking(tt.raw)
			if err != nil || got != tt.want {
				t.Errorf("NormalizeThinking(%q) = %q, %v; want %q, nil", tt.raw, got, err, tt.want)
			}
		})
	}
}

func TestNormalizeThinkingInvalid(t *testing.T) {
	tests := []struct {
		raw, want string
	}{
		{"bogus", `Invalid thinking level "bogus". Use one of: off, minimal, low, medium, high, xhigh, adaptive.`},
		{"  Turbo ", `Invalid thinking level "Turbo". Use one of: off, minimal, low, medium, high, xhigh, adaptive.`},
		{`say "hi"`, `Invalid thinking level "say "hi"". Use one of: off, minimal, low, medium, high, xhigh, adaptive.`},
		// Only adaptive/auto/xhigh ignore separators.
		{"me-dium", `Invalid thinking level "me-dium". Use one of: off, minimal, low, medium, high, xhigh, adaptive.`},
		{"think hard", `Invalid thinking level "think hard". Use one of: off, minimal, low, medium, high, xhigh, adaptive.`},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := NormalizeThinking(tt.raw)
			if got != "" || err == nil {
				t.Fatalf("NormalizeThinking(%q) = %q, %v; want error", tt.raw, got, err)
			}
			if err.Error() != tt.want {
				t.Errorf("error = %q\nwant    %q", err, tt.want)
			}
			var te *ThinkingLevelError
			if !errors.As(err, &te) || te.Raw != strings.TrimSpace(tt.raw) {
				t.Errorf("error %#v is not a *ThinkingLevelError for %q", err, tt.raw)
			}
		})
	}
}
