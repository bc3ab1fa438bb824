package gateway

import (
	"strings"
	"testing"
)

func TestParseModelArgs(t *testing.T) {
	tests := []struct {
		in    string
		want  modelArgs
		usage string // a prefix of the usage reply; "" none
	}{
		{"", modelArgs{}, ""},
		{"  -s ", modelArgs{}, ""},
		{"status", modelArgs{}, ""},
		{"openai/gpt-4.1", modelArgs{Ref: "openai/gpt-4.1"}, ""},
		{"openai/gpt-4.1 -s", modelArgs{Ref: "openai/gpt-4.1"}, ""},
		{"--session Fake/Model-X", modelArgs{Ref: "Fake/Model-X"}, ""},
		{"openai/gpt-4.1 -a", modelArgs{Ref: "openai/gpt-4.1", Wider: true}, ""},
		{"openai/gpt-4.1 --GLOBAL", modelArgs{Ref: "openai/gpt-4.1", Wider: true}, ""},
		{"openai/gpt-4.1 explain this", modelArgs{Ref: "openai/gpt-4.1", Text: "explain this"}, ""},
		{"openai/gpt-4.1 -s\nline one\n  line two -a", modelArgs{Ref: "openai/gpt-4.1", Text: "line one\n  line two -a"}, ""},
		{"default", modelArgs{Reset: true}, ""},
		{"Unpin -s", modelArgs{Reset: true}, ""},
		{"default and go on", modelArgs{Reset: true, Text: "and go on"}, ""},
		{"list", modelArgs{List: true}, ""},
		{"list openai", modelArgs{List: true, Provider: "openai"}, ""},
		{"list a b", modelArgs{}, "Usage: /model list"},
		{"status now", modelArgs{}, "Usage: /model status"},
		{"openai/gpt-4.1 --runtime x", modelArgs{}, `Unknown option "--runtime"`},
		{"-x openai/gpt-4.1", modelArgs{}, `Unknown option "-x"`},
	}
	for _, tt := range tests {
		got, usage := parseModelArgs(tt.in)
		if got != tt.want || !strings.HasPrefix(usage, tt.usage) || (tt.usage == "") != (usage == "") {
			t.Errorf("parseModelArgs(%q) = %+v, %q; want %+v, %q…", tt.in, got, usage, tt.want, tt.usage)
		}
	}
}

func TestModelsText(t *testing.T) {
	models := []CatalogModel{
		{Provider: "openai", ID: "gpt-4.1", Available: true, Default: true},
		{Provider: "anthropic", ID: "claude-b", Name: "Claude B", UnavailableReason: "missing-auth"},
		{Provider: "anthropic", ID: "claude-a", Name: "claude-a", Available: true},
	}
	tests := []struct{ arg, want string }{
		{"", "Providers:\n- anthropic (2)\n- openai (1)\n\nUse: /models <provider>\nSwitch: /model <provider/model>"},
		{"anthropic", "Models (anthropic) — 2\n- anthropic/claude-a\n- anthropic/claude-b (Claude B) · unavailable: missing-auth\n\nSwitch: /model <provider/model>"},
		{"list openai", "Models (openai) — 1\n- openai/gpt-4.1 · default\n\nSwitch: /model <provider/model>"},
		{"ollama", "Unknown provider: ollama\n\nAvailable providers:\n- anthropic\n- openai\n\nUse: /models <provider>"},
	}
	for _, tt := range tests {
		if got := modelsText(models, tt.arg); got != tt.want {
			t.Errorf("modelsText(%q) =\n%s\nwant\n%s", tt.arg, got, tt.want)
		}
	}
	if got := modelsText(nil, ""); got != "No models available." {
		t.Errorf("modelsText(nil) = %q", got)
	}
}
