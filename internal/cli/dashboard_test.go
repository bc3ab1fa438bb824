package cli

import (
	"strings"
	"testing"
)

func TestDashboardURL(t *testing.T) {
	tests := []struct{ ws, token, want string }{
		{"ws://127.0.0.1:18789", "tok", "http://127.0.0.1:18789/#token=tok"},
		{"wss://gw.example:443/some/path?x=1", "a b&c", "https://gw.example:443/#token=a%20b%26c"},
		{"ws://[::1]:5000/", "", "http://[::1]:5000/"},
	}
	for _, tt := range tests {
		got, err := dashboardURL(tt.ws, tt.token)
		if err != nil || got != tt.want {
			t.Errorf("dashboardURL(%q, %q) = %q, %v; want %q", tt.ws, tt.token, got, err, tt.want)
		}
	}
	if _, err := dashboardURL("ftp://x", ""); err == nil {
		t.Error("ftp URL accepted")
	}
}

func TestDashboardCommand(t *testing.T) {
	g := startGateway(t, "")
	out := g.mustRun("dashboard", "--no-open")
	if !strings.HasPrefix(out, "http://127.0.0.1:") || !strings.Contains(out, "/#token=") {
		t.Errorf("dashboard = %q", out)
	}
}
