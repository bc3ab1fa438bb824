package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/sandbox/dockertest"
)

func TestSandboxExplain(t *testing.T) {
	dir := t.TempDir()
	cfg := `{ agents: { defaults: { sandbox: { mode: "non-main", workspaceAccess: "ro" } },
	  list: [{ id: "main", default: true }, { id: "box", sandbox: { mode: "all", workspaceAccess: "rw", network: "host" },
	    tools: { sandbox: { tools: { alsoAllow: ["web_fetch"] } } } },
	    { id: "priv", sandbox: { mode: "all", scope: "session" } }] },
	  tools: { elevated: { allowFrom: { webchat: ["*"] } } } }`
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{config.EnvStateDir: dir}
	tests := []struct {
		args      []string
		want, not []string
	}{
		{[]string{"sandbox", "explain"}, []string{"agent: main", "session: agent:main:main", "sandboxed: no"}, []string{"backend"}},
		{[]string{"sandbox", "explain", "--session", "agent:main:side"}, []string{"sandboxed: yes", "backend: bubblewrap", "read-only", "network: none", "file tools: read, ls",
			"scope: agent (main)", "sandbox tool policy: allow default [exec process read ls", "elevated: for webchat: *"}, nil},
		{[]string{"sandbox", "explain", "--agent", "box"}, []string{"agent: box", "sandboxed: yes", "read-write", "network: host", "limits: cpu 600s", "alsoAllow [web_fetch]"}, []string{", net namespaces"}},
		{[]string{"sandbox", "explain", "--session", "agent:priv:work"}, []string{"scope: session (agent:priv:work)", "sandbox workspace: " + filepath.Join(dir, "sandboxes", "session-agent-priv-work-"),
			"workspaceRoot: " + filepath.Join(dir, "sandboxes")}, nil},
	}
	for _, tc := range tests {
		r := runCLI(t, env, tc.args...)
		if r.err != nil {
			t.Fatalf("%v: %v", tc.args, r.err)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, r.stdout)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(r.stdout, w) {
				t.Errorf("%v: output has %q:\n%s", tc.args, w, r.stdout)
			}
		}
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "switchboard.json5"), []byte(`{ agents: { defaults: { sandbox: { workspaceAccess: "full" } } } }`), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, map[string]string{config.EnvStateDir: bad}, "sandbox", "explain"); r.err == nil || !strings.Contains(r.err.Error(), "workspaceAccess") {
		t.Errorf("bad config: err = %v", r.err)
	}
}

func TestSandboxExplainDocker(t *testing.T) {
	eng := dockertest.New(t)
	t.Setenv("DOCKER_HOST", eng.Host)
	dir := t.TempDir()
	cfg := `{ agents: {
	  defaults: { sandbox: { mode: "all", backend: "docker", workspaceAccess: "rw",
	    docker: { image: "team/sbx:1", memory: "1g", env: { LANG: "C.UTF-8" }, binds: ["/srv/shared:/shared:ro"] } } },
	  list: [{ id: "main", default: true, sandbox: { docker: { network: "bridge", cpus: 2, pidsLimit: 64, binds: ["/srv/own:/own:rw"], env: { API_KEY: "hunter2" } } } }] } }`
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, map[string]string{config.EnvStateDir: dir}, "sandbox", "explain")
	if r.err != nil {
		t.Fatal(r.err)
	}
	for _, w := range []string{
		"sandboxed: yes", "backend: docker (Engine API at " + eng.Host, "image: team/sbx:1", "read-write at /workspace",
		"bind: /srv/shared:/shared:ro", "bind: /srv/own:/own:rw", "network: bridge",
		"limits: memory 1073741824 bytes, memory+swap default, cpus 2, pids 64", "env: API_KEY LANG (values not shown)",
		"capabilities dropped: ALL", "status: available",
	} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("output lacks %q:\n%s", w, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "hunter2") {
		t.Errorf("output shows an env value:\n%s", r.stdout)
	}
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "none.sock"))
	r = runCLI(t, map[string]string{config.EnvStateDir: dir}, "sandbox", "explain")
	if r.err != nil || !strings.Contains(r.stdout, "status: sandbox unavailable: Docker daemon unreachable") {
		t.Errorf("without a daemon: err %v\n%s", r.err, r.stdout)
	}
}
