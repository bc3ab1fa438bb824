package cli

import (
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/config"
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

// With no gateway on the state dir, the link would not load (and on a
// fresh state dir has no token yet): dashboard says to start serve first.
// With one running, it says nothing more.
func TestDashboardWithoutGateway(t *testing.T) {
	dir := t.TempDir()
	r := runCLI(t, map[string]string{config.EnvStateDir: dir, "HOME": dir}, "dashboard", "--no-open")
	if r.err != nil || r.stdout != "http://127.0.0.1:18789/\n" {
		t.Errorf("dashboard: %v %q", r.err, r.stdout)
	}
	if want := "no gateway is running on " + dir + ": start it with `switchboard serve`"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr = %q, want %q", r.stderr, want)
	}

	g := startLoggingGateway(t, nil)
	r = runCLI(t, map[string]string{config.EnvStateDir: g.dir, "HOME": g.dir}, "dashboard", "--no-open")
	if want := "http" + strings.TrimPrefix(g.url, "ws") + "/#token="; r.err != nil || !strings.HasPrefix(r.stdout, want) || r.stderr != "" {
		t.Errorf("dashboard with the gateway running: %v %q %q", r.err, r.stdout, r.stderr)
	}
}
