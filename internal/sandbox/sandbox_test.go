package sandbox

import (
	"cmp"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestArgs(t *testing.T) {
	tests := []struct {
		name    string
		spec    Spec
		ws, cwd string
		want    []string // pairs/args that must appear
		absent  []string
		err     string
	}{
		{name: "rw default", ws: "/w", cwd: "/w/sub", want: []string{"--bind /w /w", "--chdir /w/sub", "--unshare-all", "--tmpfs /tmp"}, absent: []string{"--share-net"}},
		{name: "ro", spec: Spec{WorkspaceAccess: "ro"}, ws: "/w", want: []string{"--ro-bind /w /w", "--chdir /w"}},
		{name: "none", spec: Spec{WorkspaceAccess: "none"}, ws: "/w", want: []string{"--chdir /tmp"}, absent: []string{"--bind /w /w", "--ro-bind /w /w"}},
		{name: "none with a scope workspace", spec: Spec{WorkspaceAccess: "none", ScopeDir: "/s/agent-main"}, ws: "/s/agent-main", cwd: "/s/agent-main/x",
			want: []string{"--bind /s/agent-main /s/agent-main", "--chdir /s/agent-main/x"}, absent: []string{"--bind /w /w"}},
		{name: "none with a scope workspace, cwd outside", spec: Spec{WorkspaceAccess: "none", ScopeDir: "/s/a"}, ws: "/s/a", cwd: "/w", err: "outside the sandbox workspace"},
		{name: "ro with a scope workspace", spec: Spec{WorkspaceAccess: "ro", ScopeDir: "/s/a"}, ws: "/w", cwd: "/s/a",
			want: []string{"--ro-bind /w /w --bind /s/a /s/a", "--chdir /s/a"}},
		{name: "rw ignores the scope workspace", spec: Spec{ScopeDir: "/s/a"}, ws: "/w", want: []string{"--bind /w /w"}, absent: []string{"--bind /s/a /s/a"}},
		{name: "relative scope workspace", spec: Spec{WorkspaceAccess: "none", ScopeDir: "s/a"}, ws: "/w", err: "absolute"},
		{name: "bad scope", spec: Spec{Scope: "global"}, ws: "/w", err: "scope"},
		{name: "host net", spec: Spec{Network: "host"}, ws: "/w", want: []string{"--share-net"}},
		{name: "limits", spec: Spec{Limits: Limits{Procs: 7, CPUSeconds: 3}}, ws: "/w", want: []string{"--nproc=7", "--cpu=3"}},
		{name: "cwd outside", ws: "/w", cwd: "/etc", err: "outside the workspace"},
		{name: "cwd prefix trick", ws: "/w", cwd: "/w2", err: "outside the workspace"},
		{name: "relative ws", ws: "w", err: "absolute"},
		{name: "bad access", spec: Spec{WorkspaceAccess: "full"}, ws: "/w", err: "workspaceAccess"},
		{name: "bad network", spec: Spec{Network: "bridge"}, ws: "/w", err: "network"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := tt.spec.Args(tt.ws, tt.cwd, []string{"/bin/sh", "-c", "true"})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			joined := " " + strings.Join(a, " ") + " "
			for _, w := range tt.want {
				if !strings.Contains(joined, " "+w+" ") {
					t.Errorf("args lack %q: %s", w, joined)
				}
			}
			for _, w := range tt.absent {
				if strings.Contains(joined, " "+w+" ") {
					t.Errorf("args have %q: %s", w, joined)
				}
			}
			if !slices.Equal(a[len(a)-3:], []string{"/bin/sh", "-c", "true"}) {
				t.Errorf("command not last: %v", a)
			}
		})
	}
}

// KeyFor and DirName name a scope's sandbox and its private workspace;
// distinct keys never share a directory.
func TestScopeKeyAndDir(t *testing.T) {
	for _, tc := range []struct{ scope, agent, session, key, dir string }{
		{"", "main", "agent:main:x", "main", "agent-main"},
		{"agent", "ops", "agent:ops:main", "ops", "agent-ops"},
		{"session", "main", "agent:main:Work", "agent:main:Work", "session-agent-main-work-"},
		{"shared", "main", "agent:main:x", "shared", "shared"},
	} {
		key := KeyFor(tc.scope, tc.agent, tc.session)
		if key != tc.key {
			t.Errorf("KeyFor(%q, %q, %q) = %q, want %q", tc.scope, tc.agent, tc.session, key, tc.key)
		}
		if d := DirName(cmp.Or(tc.scope, ScopeAgent), key); !strings.HasPrefix(d, tc.dir) || (strings.HasSuffix(tc.dir, "-") && len(d) != len(tc.dir)+8) {
			t.Errorf("DirName(%q) = %q, want %q…", key, d, tc.dir)
		}
	}
	seen := map[string]string{}
	for _, k := range []string{"agent:main:a/b", "agent:main:a-b", "agent:main:A:b", "agent:main:a:b", "../x", strings.Repeat("y", 100), strings.Repeat("y", 101), ""} {
		d := DirName(ScopeSession, k)
		if o, dup := seen[d]; dup {
			t.Errorf("keys %q and %q share %q", o, k, d)
		}
		seen[d] = k
		if strings.ContainsAny(d, "/.:") || len(d) > 70 {
			t.Errorf("DirName(%q) = %q", k, d)
		}
	}
}

func TestEnvKeepsGatewaySecretsOut(t *testing.T) {
	t.Setenv("SWITCHBOARD_GATEWAY_TOKEN", "secret")
	for _, kv := range Env("A=1") {
		if strings.Contains(kv, "secret") {
			t.Fatalf("env leaks %q", kv)
		}
	}
}

// requireBwrap skips without bwrap, except under CI=true where it fails.
func requireBwrap(t *testing.T) {
	t.Helper()
	if _, err := Check(context.Background()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("sandbox backend required under CI: %v", err)
		}
		t.Skip(err)
	}
}

func TestCommandConfines(t *testing.T) {
	requireBwrap(t)
	ws := t.TempDir()
	outside := t.TempDir()
	run := func(spec Spec, script string) (string, error) {
		cmd, err := spec.Command(context.Background(), ws, ws, []string{"/bin/sh", "-c", script}, Env())
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(Spec{}, "echo hi > f && cat f"); err != nil || out != "hi\n" {
		t.Fatalf("rw write = %q, %v", out, err)
	}
	if _, err := run(Spec{}, "echo x > "+filepath.Join(outside, "p")); err == nil {
		t.Error("write outside the workspace succeeded")
	}
	if _, err := os.Stat(filepath.Join(outside, "p")); err == nil {
		t.Error("file outside the workspace exists")
	}
	if _, err := run(Spec{WorkspaceAccess: "ro"}, "echo x > g"); err == nil {
		t.Error("write to a read-only workspace succeeded")
	}
	if out, _ := run(Spec{}, "ls /proc | grep -c '^[0-9]'"); strings.TrimSpace(out) == "" || len(strings.TrimSpace(out)) > 1 {
		t.Errorf("pid namespace shows host processes: %q", out)
	}
	if out, _ := run(Spec{}, "cat /sys/class/net/*/operstate 2>/dev/null; ls /sys/class/net"); strings.Contains(out, "eth") {
		t.Errorf("network namespace shows host interfaces: %q", out)
	}
}

func TestCheckMissingBwrap(t *testing.T) {
	probe.mu.Lock()
	savedDone, savedPath := probe.done, probe.path
	probe.done, probe.path = false, ""
	probe.mu.Unlock()
	defer func() {
		probe.mu.Lock()
		probe.done, probe.path = savedDone, savedPath
		probe.mu.Unlock()
	}()
	t.Setenv("PATH", t.TempDir())
	_, err := Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "bwrap not found") || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Fatalf("err = %v", err)
	}
	if _, err := exec.LookPath("bwrap"); err == nil {
		t.Fatal("PATH not cleared")
	}
}

// A memory hog stops at the address-space limit.
func TestMemoryLimit(t *testing.T) {
	requireBwrap(t)
	spec := Spec{WorkspaceAccess: AccessNone, Limits: Limits{MemoryBytes: 64 << 20}}
	cmd, err := spec.Command(context.Background(), "", "", []string{"/bin/sh", "-c", `awk 'BEGIN { s = "xxxxxxxxxxxxxxxx"; while (1) s = s s }'; echo "exit $?"`}, Env())
	if err != nil {
		t.Fatal(err)
	}
	out, _ := cmd.CombinedOutput()
	if strings.Contains(string(out), "exit 0") || !strings.Contains(string(out), "exit ") {
		t.Fatalf("memory hog = %q", out)
	}
}

// A file bigger than the size limit cannot be written.
func TestFileSizeLimit(t *testing.T) {
	requireBwrap(t)
	spec := Spec{WorkspaceAccess: AccessNone, Limits: Limits{FileBytes: 1 << 20}}
	cmd, err := spec.Command(context.Background(), "", "", []string{"/bin/sh", "-c", `head -c 4000000 /dev/zero > /tmp/big; wc -c < /tmp/big`}, Env())
	if err != nil {
		t.Fatal(err)
	}
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "1048576") {
		t.Fatalf("file size limit: %q", out)
	}
}

// Args never lets a workdir outside the workspace through and never
// panics, whatever the paths.
func FuzzArgs(f *testing.F) {
	f.Add("/w", "/w/a", "rw")
	f.Add("/w", "/w/../etc", "ro")
	f.Add("/w/", "/w2", "none")
	f.Fuzz(func(t *testing.T, ws, cwd, access string) {
		a, err := Spec{WorkspaceAccess: access}.Args(ws, cwd, []string{"/bin/true"})
		if err != nil {
			return
		}
		i := slices.Index(a, "--chdir")
		if i < 0 || i+1 >= len(a) {
			t.Fatalf("no --chdir in %v", a)
		}
		dir := a[i+1]
		if access == AccessNone {
			if dir != "/tmp" {
				t.Fatalf("access none starts in %q", dir)
			}
			return
		}
		root := filepath.Clean(ws)
		if dir != root && !strings.HasPrefix(dir, root+"/") {
			t.Fatalf("workdir %q outside workspace %q", dir, root)
		}
	})
}

// The seccomp filter denies namespace and mount syscalls inside.
func TestSeccompDenies(t *testing.T) {
	requireBwrap(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare(1) missing")
	}
	cmd, err := Spec{WorkspaceAccess: AccessNone}.Command(context.Background(), "", "", []string{"/bin/sh", "-c", "grep Seccomp: /proc/self/status; unshare --mount true; echo rc=$?; unshare --user true; echo rc=$?"}, Env())
	if err != nil {
		t.Fatal(err)
	}
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "Seccomp:\t2") || strings.Count(string(out), "rc=1") != 2 || !strings.Contains(string(out), "Operation not permitted") {
		t.Fatalf("unshare inside the sandbox: %q", out)
	}
}

func TestSeccompProgram(t *testing.T) {
	prog, err := seccompProgram()
	if err != nil || len(prog) == 0 || len(prog)%8 != 0 {
		t.Fatalf("program %d bytes, %v", len(prog), err)
	}
}
