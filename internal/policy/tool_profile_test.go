package policy

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// switchboardTools are the tools the daemon registers.
var switchboardTools = []string{"agents_list", "apply_patch", "edit", "exec", "ls", "read",
	"sessions_history", "sessions_list", "sessions_send", "sessions_spawn", "write"}

func offered(global, agent ToolSelection) []string {
	var out []string
	for _, t := range switchboardTools {
		if ToolOffered(t, global, agent) {
			out = append(out, t)
		}
	}
	return out
}

func TestToolOffered(t *testing.T) {
	all := slices.Clone(switchboardTools)
	sessions := []string{"sessions_history", "sessions_list", "sessions_send", "sessions_spawn"}
	tests := []struct {
		name          string
		global, agent ToolSelection
		want          []string
	}{
		{"unset", ToolSelection{}, ToolSelection{}, all},
		{"full", ToolSelection{Profile: "full"}, ToolSelection{}, all},
		{"unknown profile filters nothing", ToolSelection{Profile: "bogus"}, ToolSelection{}, all},
		{"minimal", ToolSelection{Profile: "minimal"}, ToolSelection{}, nil},
		{"minimal plus alsoAllow", ToolSelection{Profile: "minimal", AlsoAllow: []string{"read", "group:runtime"}}, ToolSelection{}, []string{"exec", "read"}},
		{"coding", ToolSelection{Profile: "Coding"}, ToolSelection{}, slices.Concat([]string{"apply_patch", "edit", "exec", "ls", "read"}, sessions, []string{"write"})},
		{"messaging", ToolSelection{Profile: "messaging"}, ToolSelection{}, sessions},
		{"agent profile overrides", ToolSelection{Profile: "coding"}, ToolSelection{Profile: "minimal"}, nil},
		{"agent alsoAllow overrides global", ToolSelection{Profile: "minimal", AlsoAllow: []string{"read"}}, ToolSelection{AlsoAllow: []string{"write"}}, []string{"apply_patch", "write"}},
		{"deny group", ToolSelection{Deny: []string{"group:fs"}}, ToolSelection{}, []string{"agents_list", "exec", "sessions_history", "sessions_list", "sessions_send", "sessions_spawn"}},
		{"deny wins over allow", ToolSelection{Allow: []string{"exec", "read"}, Deny: []string{"EXEC"}}, ToolSelection{}, []string{"read"}},
		{"bash alias", ToolSelection{Allow: []string{"bash"}}, ToolSelection{}, []string{"exec"}},
		{"list alias allows ls", ToolSelection{Allow: []string{"read", " List "}}, ToolSelection{}, []string{"ls", "read"}},
		{"list alias in alsoAllow", ToolSelection{Profile: "minimal", AlsoAllow: []string{"list"}}, ToolSelection{}, []string{"ls"}},
		{"list alias denies ls", ToolSelection{Allow: []string{"group:fs"}}, ToolSelection{Deny: []string{"LIST"}}, []string{"apply_patch", "edit", "read", "write"}},
		{"list alias in the agent's allow", ToolSelection{}, ToolSelection{Allow: []string{"list", "exec"}}, []string{"exec", "ls"}},
		{"wildcard allow", ToolSelection{Allow: []string{"sessions_*"}}, ToolSelection{}, sessions},
		{"wildcard deny", ToolSelection{Deny: []string{"*"}}, ToolSelection{}, nil},
		{"star allow", ToolSelection{Allow: []string{"*"}, Deny: []string{"sessions_*", "agents_list"}}, ToolSelection{}, []string{"apply_patch", "edit", "exec", "ls", "read", "write"}},
		{"write allows apply_patch", ToolSelection{Allow: []string{"write"}}, ToolSelection{}, []string{"apply_patch", "write"}},
		{"deny write keeps apply_patch", ToolSelection{Deny: []string{"write"}, Allow: []string{"group:fs"}}, ToolSelection{}, []string{"apply_patch", "edit", "ls", "read"}},
		{"profile then global allow", ToolSelection{Profile: "coding", Allow: []string{"read", "agents_list"}}, ToolSelection{}, []string{"read"}},
		{"agent layer narrows", ToolSelection{Profile: "coding"}, ToolSelection{Deny: []string{"group:runtime"}}, slices.Concat([]string{"apply_patch", "edit", "ls", "read"}, sessions, []string{"write"})},
		{"agent allow narrows", ToolSelection{}, ToolSelection{Allow: []string{"read"}}, []string{"read"}},
		{"unknown group restricts", ToolSelection{Allow: []string{"group:nope"}}, ToolSelection{}, nil},
		{"tools we lack", ToolSelection{Allow: []string{"web_fetch", "browser"}}, ToolSelection{}, nil},
		{"blank entries ignored", ToolSelection{Allow: []string{" ", ""}, Deny: []string{""}}, ToolSelection{}, all},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, offered(tc.global, tc.agent)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestExpandToolGroups(t *testing.T) {
	got := ExpandToolGroups([]string{"GROUP:Runtime", "read", "group:unknown"})
	want := []string{"exec", "process", "code_execution", "read", "group:unknown"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if ExpandToolGroups(nil) != nil {
		t.Error("nil not kept")
	}
}
