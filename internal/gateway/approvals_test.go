package gateway

import (
	"testing"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func TestApprovalClient(t *testing.T) {
	for _, tc := range []struct {
		name     string
		role     string
		scopes   []string
		caps     []string
		clientID string
		want     bool
	}{
		{"cap and scope", "operator", []string{wire.ScopeApprovals}, []string{"exec-approvals"}, "cli", true},
		{"approvals cap", "operator", []string{wire.ScopeRead, wire.ScopeApprovals}, []string{"approvals"}, "cli", true},
		{"admin covers the scope", "operator", []string{wire.ScopeAdmin}, []string{"exec-approvals"}, "test", true},
		{"no cap", "operator", []string{wire.ScopeAdmin}, nil, "cli", false},
		{"control ui without cap", "operator", []string{wire.ScopeAdmin}, nil, "openclaw-control-ui", true},
		{"cap without scope", "operator", []string{wire.ScopeRead, wire.ScopeWrite}, []string{"exec-approvals"}, "cli", false},
		{"node", "node", []string{wire.ScopeAdmin}, []string{"exec-approvals"}, "node-host", false},
	} {
		if got := approvalClient(tc.role, tc.scopes, tc.caps, tc.clientID); got != tc.want {
			t.Errorf("%s: approvalClient = %v, want %v", tc.name, got, tc.want)
		}
	}
}
