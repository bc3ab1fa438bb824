package policy

import (
	"slices"
	"testing"
)

func TestSubagentDeniedTools(t *testing.T) {
	always := []string{"gateway", "agents_list", "whatsapp_login", "session_status", "cron", "memory_search", "memory_get", "sessions_send"}
	leaf := append(slices.Clone(always), "sessions_list", "sessions_history", "sessions_spawn")
	tests := []struct {
		depth, max int
		want       []string
	}{
		{1, 1, leaf}, // defaults: every sub-agent is a leaf
		{1, 2, always},
		{2, 2, leaf},
		{3, 2, leaf},
		{0, 1, always},
		{-1, 1, leaf}, // negative depth counts as 1
		{-1, 2, always},
		{1, 0, leaf}, // max(1, maxSpawnDepth)
		{4, 5, always},
		{5, 5, leaf},
	}
	for _, tt := range tests {
		got := SubagentDeniedTools(tt.depth, tt.max)
		if !slices.Equal(got, tt.want) {
			t.Errorf("SubagentDeniedTools(%d, %d) = %q, want %q", tt.depth, tt.max, got, tt.want)
		}
	}
	got := SubagentDeniedTools(1, 1)
	got[0] = "mutated"
	if SubagentDeniedTools(1, 1)[0] != "gateway" {
		t.Error("SubagentDeniedTools returns shared storage")
	}
}

func TestSubagentToolAllowed(t *testing.T) {
	type cfg struct{ allow, alsoAllow, deny []string }
	tests := []struct {
		name       string
		tool       string
		depth, max int
		cfg        cfg
		want       bool
	}{
		// Defaults (maxSpawnDepth 1): every sub-agent is a leaf.
		{"leaf: read", "read", 1, 1, cfg{}, true},
		{"leaf: exec", "exec", 1, 1, cfg{}, true},
		{"leaf: sessions_spawn", "sessions_spawn", 1, 1, cfg{}, false},
		{"leaf: sessions_list", "sessions_list", 1, 1, cfg{}, false},
		{"leaf: sessions_history", "sessions_history", 1, 1, cfg{}, false},
		{"leaf: sessions_send", "sessions_send", 1, 1, cfg{}, false},
		{"leaf: gateway", "gateway", 1, 1, cfg{}, false},
		{"leaf: agents_list", "agents_list", 1, 1, cfg{}, false},
		{"leaf: whatsapp_login", "whatsapp_login", 1, 1, cfg{}, false},
		{"leaf: session_status", "session_status", 1, 1, cfg{}, false},
		{"leaf: cron", "cron", 1, 1, cfg{}, false},
		{"leaf: memory_search", "memory_search", 1, 1, cfg{}, false},
		{"leaf: memory_get", "memory_get", 1, 1, cfg{}, false},
		{"leaf: subagents not denied here", "subagents", 1, 1, cfg{}, true},

		// Orchestrator (depth < maxSpawnDepth).
		{"orchestrator: sessions_spawn", "sessions_spawn", 1, 2, cfg{}, true},
		{"orchestrator: sessions_list", "sessions_list", 1, 2, cfg{}, true},
		{"orchestrator: sessions_history", "sessions_history", 1, 2, cfg{}, true},
		{"orchestrator: sessions_send", "sessions_send", 1, 2, cfg{}, false},
		{"orchestrator: agents_list", "agents_list", 1, 2, cfg{}, false},
		{"depth 2 of 2 is a leaf", "sessions_spawn", 2, 2, cfg{}, false},
		{"negative depth counts as 1", "sessions_spawn", -3, 1, cfg{}, false},
		{"maxSpawnDepth below 1 counts as 1", "sessions_spawn", 1, 0, cfg{}, false},

		// Re-enabling default-denied tools.
		{"alsoAllow re-enables", "sessions_send", 1, 1, cfg{alsoAllow: []string{"sessions_send"}}, true},
		{"alsoAllow alone restricts nothing", "read", 1, 1, cfg{alsoAllow: []string{"sessions_send"}}, true},
		{"alsoAllow normalized", "sessions_send", 1, 1, cfg{alsoAllow: []string{" Sessions_Send "}}, true},
		{"allow re-enables", "sessions_spawn", 1, 1, cfg{allow: []string{"sessions_spawn", "read"}}, true},
		{"allow restricts", "write", 1, 1, cfg{allow: []string{"sessions_spawn", "read"}}, false},
		{"allow and alsoAllow union: allow part", "read", 1, 1, cfg{allow: []string{"read"}, alsoAllow: []string{"sessions_spawn"}}, true},
		{"allow and alsoAllow union: alsoAllow part", "sessions_spawn", 1, 1, cfg{allow: []string{"read"}, alsoAllow: []string{"sessions_spawn"}}, true},
		{"allow and alsoAllow union: others", "write", 1, 1, cfg{allow: []string{"read"}, alsoAllow: []string{"sessions_spawn"}}, false},
		{"empty allow + alsoAllow restricts (quirk)", "read", 1, 1, cfg{allow: []string{}, alsoAllow: []string{"x"}}, false},
		{"empty allow + alsoAllow: listed", "x", 1, 1, cfg{allow: []string{}, alsoAllow: []string{"x"}}, true},
		{"star re-enables nothing", "sessions_send", 1, 1, cfg{allow: []string{"*"}}, false},
		{"star allows the rest", "write", 1, 1, cfg{allow: []string{"*"}}, true},
		{"glob re-enables nothing", "sessions_spawn", 1, 1, cfg{alsoAllow: []string{"sessions_*"}}, false},
		{"blank allow is no allow list", "write", 1, 1, cfg{allow: []string{"", "  "}}, true},
		{"empty allow is no allow list", "write", 1, 1, cfg{allow: []string{}}, true},

		// Configured deny always wins.
		{"deny", "read", 1, 1, cfg{deny: []string{"read"}}, false},
		{"deny beats allow", "read", 1, 1, cfg{allow: []string{"read"}, deny: []string{"read"}}, false},
		{"deny beats alsoAllow re-enable", "sessions_send", 1, 1, cfg{alsoAllow: []string{"sessions_send"}, deny: []string{"sessions_send"}}, false},
		{"deny normalized", "read", 1, 1, cfg{deny: []string{" READ "}}, false},
		{"deny glob", "memory_store", 1, 2, cfg{deny: []string{"memory*"}}, false},
		{"deny glob miss", "read", 1, 2, cfg{deny: []string{"memory*"}}, true},
		{"deny star", "read", 1, 2, cfg{deny: []string{"*"}}, false},
		{"deny alias", "exec", 1, 1, cfg{deny: []string{"bash"}}, false},

		// Names, aliases, globs.
		{"tool name normalized", "  READ ", 1, 1, cfg{allow: []string{"read"}}, true},
		{"bash is exec", "bash", 1, 1, cfg{allow: []string{"exec"}}, true},
		{"apply-patch alias", "apply-patch", 1, 1, cfg{allow: []string{"apply_patch"}}, true},
		{"list allows ls", "ls", 1, 1, cfg{allow: []string{"list"}}, true},
		{"list denies ls", "ls", 1, 1, cfg{deny: []string{"List"}}, false},
		{"apply_patch via exec", "apply_patch", 1, 1, cfg{allow: []string{"exec"}}, true},
		{"apply_patch via bash", "apply_patch", 1, 1, cfg{allow: []string{"bash"}}, true},
		{"write not via exec", "write", 1, 1, cfg{allow: []string{"exec"}}, false},
		{"allow glob", "web_search", 1, 1, cfg{allow: []string{"web_*"}}, true},
		{"allow glob miss", "read", 1, 1, cfg{allow: []string{"web_*"}}, false},
		{"allow glob case", "WEB_fetch", 1, 1, cfg{allow: []string{"Web_*"}}, true},
		{"groups are not expanded", "sessions_spawn", 1, 2, cfg{deny: []string{"group:sessions"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SubagentToolAllowed(tt.tool, tt.depth, tt.max, tt.cfg.allow, tt.cfg.alsoAllow, tt.cfg.deny)
			if got != tt.want {
				t.Errorf("SubagentToolAllowed(%q, %d, %d, %q, %q, %q) = %v, want %v",
					tt.tool, tt.depth, tt.max, tt.cfg.allow, tt.cfg.alsoAllow, tt.cfg.deny, got, tt.want)
			}
		})
	}
}
