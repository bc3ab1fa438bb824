package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestExecApprovals(t *testing.T) {
	c, w, err := Parse("x.json5", []byte(`{
  tools: { exec: { security: "allowlist", ask: "on-miss", askFallback: "full", safeBins: ["jq"], safeEnv: ["FOO"], approvalTimeoutSeconds: 5 } },
  agents: { list: [ { id: "main", tools: { exec: { ask: "always", safeBins: [], safeEnv: ["BAR"] } } } ] },
}`), OSEnv)
	if err != nil || len(w) != 0 {
		t.Fatalf("Parse: %v %v", w, err)
	}
	if got := c.ExecApprovals("main"); got.Security != "allowlist" || got.Ask != "always" || got.AskFallback != "full" || len(got.SafeBins) != 0 || got.SafeBins == nil || !slices.Equal(got.SafeEnv, []string{"BAR"}) {
		t.Errorf("main = %+v", got)
	}
	if got := c.ExecApprovals("other"); got.Ask != "on-miss" || !slices.Equal(got.SafeBins, []string{"jq"}) || !slices.Equal(got.SafeEnv, []string{"FOO"}) {
		t.Errorf("other = %+v", got)
	}
	if got := c.ExecApprovalTimeout(); got != 5*time.Second {
		t.Errorf("timeout = %v", got)
	}
	_, _, err = Parse("x.json5", []byte(`{ tools: { exec: { security: "yolo" } }, agents: { list: [ { id: "a", tools: { exec: { askFallback: "ask" } } } ] } }`), OSEnv)
	if err == nil || !strings.Contains(err.Error(), "tools.exec.security") || !strings.Contains(err.Error(), "agents.list[0].tools.exec.askFallback") {
		t.Errorf("invalid values: %v", err)
	}
}
