package policy

import "testing"

// SandboxToolAllowed resolves tools.sandbox.tools as the reference does.
func TestSandboxToolAllowed(t *testing.T) {
	none := SandboxToolPolicy{}
	tests := []struct {
		name string
		p    SandboxToolPolicy
		tool string
		want bool
	}{
		{"default keeps exec", none, "exec", true},
		{"default keeps the file tools", none, "apply_patch", true},
		{"default keeps ls", none, "ls", true},
		{"default keeps the session tools", none, "sessions_spawn", true},
		{"default drops web_fetch", none, "web_fetch", false},
		{"default drops agents_list", none, "agents_list", false},
		{"default drops an MCP tool", none, "docs__search", false},
		{"default denies gateway", none, "gateway", false},
		{"alsoAllow adds to the default", SandboxToolPolicy{AlsoAllow: []string{"web_fetch"}}, "web_fetch", true},
		{"alsoAllow keeps the default", SandboxToolPolicy{AlsoAllow: []string{"web_fetch"}}, "exec", true},
		{"alsoAllow glob", SandboxToolPolicy{AlsoAllow: []string{"docs__*"}}, "docs__search", true},
		{"allow replaces the default", SandboxToolPolicy{Allow: []string{"read"}}, "exec", false},
		{"allow with a group", SandboxToolPolicy{Allow: []string{"group:fs"}}, "write", true},
		{"allow plus alsoAllow", SandboxToolPolicy{Allow: []string{"read"}, AlsoAllow: []string{"exec"}}, "exec", true},
		{"a non-empty allow keeps view_image", SandboxToolPolicy{Allow: []string{"read"}}, "view_image", true},
		{"empty allow allows all", SandboxToolPolicy{Allow: []string{}}, "web_fetch", true},
		{"empty allow still applies the default deny", SandboxToolPolicy{Allow: []string{}}, "gateway", false},
		{"an explicit allow lifts a default deny", SandboxToolPolicy{AlsoAllow: []string{"gateway"}}, "gateway", true},
		{"a configured deny replaces the default", SandboxToolPolicy{Allow: []string{}, Deny: []string{"exec"}}, "gateway", true},
		{"deny wins over allow", SandboxToolPolicy{Allow: []string{"exec"}, Deny: []string{"group:runtime"}}, "exec", false},
		{"denying image denies view_image", SandboxToolPolicy{Deny: []string{"image"}}, "view_image", false},
		{"bash alias", SandboxToolPolicy{Deny: []string{"bash"}}, "exec", false},
		{"list alias denies ls", SandboxToolPolicy{Deny: []string{"list"}}, "ls", false},
		{"list alias allows ls", SandboxToolPolicy{Allow: []string{"List"}}, "ls", true},
		{"case-insensitive", SandboxToolPolicy{Allow: []string{"EXEC"}}, "exec", true},
	}
	for _, tt := range tests {
		if got := SandboxToolAllowed(tt.tool, tt.p); got != tt.want {
			t.Errorf("%s: SandboxToolAllowed(%q, %+v) = %v, want %v", tt.name, tt.tool, tt.p, got, tt.want)
		}
	}
}
