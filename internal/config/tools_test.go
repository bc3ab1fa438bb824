package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestToolSelectionAndExec(t *testing.T) {
	c := mustParse(t, `{}`, nil)
	if got := c.Exec(); got.Timeout != 1800*time.Second || got.MaxOutputBytes != 200_000 || got.PathPrepend != nil {
		t.Errorf("defaults = %+v", got)
	}
	if got := c.GlobalTools(); !cmp.Equal(got, ToolSelection{}) {
		t.Errorf("global = %+v", got)
	}
	c = mustParse(t, `{
  tools: { profile: "coding", alsoAllow: ["x"], deny: ["group:web"], exec: { timeoutSeconds: 0, pathPrepend: ["/opt/bin"], maxOutputBytes: 5000 } },
  agents: { list: [{ id: "ops", tools: { profile: "minimal", allow: ["read"] } }, { id: "bare" }] },
}`, nil)
	if got := c.Exec(); got.Timeout >= 0 || got.MaxOutputBytes != 5000 || !cmp.Equal(got.PathPrepend, []string{"/opt/bin"}) {
		t.Errorf("exec = %+v", got)
	}
	if diff := cmp.Diff(ToolSelection{Profile: "coding", AlsoAllow: []string{"x"}, Deny: []string{"group:web"}}, c.GlobalTools()); diff != "" {
		t.Errorf("global (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(ToolSelection{Profile: "minimal", Allow: []string{"read"}}, c.AgentToolSelection("OPS")); diff != "" {
		t.Errorf("agent (-want +got):\n%s", diff)
	}
	if got := c.AgentToolSelection("bare"); !cmp.Equal(got, ToolSelection{}) {
		t.Errorf("bare = %+v", got)
	}
}

func TestToolSelectionErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{`{tools:{profile:"huge"}}`, `tools.profile: must be one of "minimal", "coding", "messaging", "full", got "huge"`},
		{`{tools:{allow:["a"], alsoAllow:["b"]}}`, "tools.alsoAllow: tools policy cannot set both allow and alsoAllow in the same scope (merge alsoAllow into allow, or remove allow and use profile + alsoAllow)"},
		{`{agents:{list:[{id:"a", tools:{allow:[], alsoAllow:[]}}]}}`, "agents.list[0].tools.alsoAllow: agent tools cannot set both allow and alsoAllow"},
		{`{agents:{list:[{id:"a", tools:{profile:"x"}}]}}`, "agents.list[0].tools.profile: must be one of"},
		{`{tools:{exec:{timeoutSeconds:-1}}}`, "tools.exec.timeoutSeconds: must be between 0 and 604800, got -1"},
		{`{tools:{exec:{maxOutputBytes:10}}}`, "tools.exec.maxOutputBytes: must be at least 1000, got 10"},
	}
	for _, tc := range tests {
		_, _, err := Parse("test.json5", []byte(tc.src), testEnv(nil))
		var ve *ValidationError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.src, err, tc.want)
		}
	}
}
