package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/moby/moby/api/types/mount"

	"github.com/switchboardhq/switchboard/internal/sandbox"
	"github.com/switchboardhq/switchboard/internal/sandbox/dockertest"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/tools/shell"
)

// runner adapts the Docker backend to the exec tool, as the daemon does.
type runner struct {
	d    *sandbox.Docker
	spec sandbox.Spec
}

func (r runner) Start(ctx context.Context, c shell.Command) (shell.Process, error) {
	ct, err := r.d.Start(ctx, r.spec, sandbox.Run(c))
	if err != nil {
		return nil, err
	}
	return ct, nil
}

// fakeShell answers the few command lines the tests send, as a shell in
// the container would.
func fakeShell(e *dockertest.Exec) int {
	line := e.Cmd[len(e.Cmd)-1]
	switch {
	case line == "echo hi; pwd":
		fmt.Fprintf(e.Stdout, "hi\n%s\n", e.WorkingDir)
	case line == "echo out; echo err >&2; exit 3":
		fmt.Fprintln(e.Stdout, "out")
		fmt.Fprintln(e.Stderr, "err")
		return 3
	case line == "env":
		for _, kv := range e.Env {
			fmt.Fprintln(e.Stdout, kv)
		}
	case line == "cat":
		_, _ = io.Copy(e.Stdout, e.Stdin)
	case strings.HasPrefix(line, "sleep"):
		fmt.Fprintln(e.Stdout, "sleeping")
		<-e.Killed
		return 137
	default:
		fmt.Fprintf(e.Stderr, "sh: %s: not found\n", line)
		return 127
	}
	return 0
}

func call(t *testing.T, tool tools.Tool, ws string, args map[string]any) (*tools.Result, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	ctx := tools.WithCaller(context.Background(), tools.Caller{SessionKey: "agent:main:main", AgentID: "main", Workspace: ws})
	return tool.Call(ctx, raw)
}

func tempWorkspace(t *testing.T) string {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// waitFor polls cond for up to 5 s (container removal ends after the
// tool's answer).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestDockerExecThroughFakeEngine(t *testing.T) {
	eng := dockertest.New(t, "openclaw-sandbox:bookworm-slim")
	eng.Run = fakeShell
	ws := tempWorkspace(t)
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	extra := t.TempDir()
	spec := sandbox.Spec{Backend: "docker", WorkspaceAccess: "rw", Docker: sandbox.DockerSpec{
		User: "1000:1000", Memory: "512m", CPUs: 1.5, PidsLimit: 64,
		Env:   map[string]string{"FOO": "bar"},
		Binds: []string{extra + ":/data:ro"}, DNS: []string{"1.1.1.1"}, ExtraHosts: []string{"svc:10.0.0.5"},
	}}
	d := sandbox.NewDocker(eng.Host)
	t.Cleanup(func() { _ = d.Close() })
	tool := shell.New(shell.Config{}).WithRunner(runner{d, spec})

	tests := []struct {
		name    string
		args    map[string]any
		want    string
		workdir string
	}{
		{"output and cwd", map[string]any{"command": "echo hi; pwd"}, "hi\n/workspace\n", "/workspace"},
		{"subdirectory", map[string]any{"command": "echo hi; pwd", "workdir": "sub"}, "hi\n/workspace/sub\n", "/workspace/sub"},
		{"stderr and exit code", map[string]any{"command": "echo out; echo err >&2; exit 3"}, "out\nerr\n\n\n(Command exited with code 3)", "/workspace"},
		{"not found", map[string]any{"command": "nope"}, "sh: nope: not found\n\n\nCommand not found", "/workspace"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(eng.Created())
			res, err := call(t, tool, ws, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != tc.want {
				t.Errorf("text = %q, want %q", res.Text, tc.want)
			}
			created := eng.Created()
			if len(created) != before+1 {
				t.Fatalf("%d containers created, want 1", len(created)-before)
			}
			c := created[len(created)-1]
			if c.Config.WorkingDir != tc.workdir {
				t.Errorf("WorkingDir = %q, want %q", c.Config.WorkingDir, tc.workdir)
			}
			if want := []string{"/bin/sh", "-c", tc.args["command"].(string)}; !slices.Equal(c.Config.Cmd, want) {
				t.Errorf("Cmd = %q, want %q", c.Config.Cmd, want)
			}
		})
	}

	c := eng.Created()[0]
	if !strings.HasPrefix(c.Name, sandbox.DefaultContainerPrefix) {
		t.Errorf("name %q lacks the prefix %q", c.Name, sandbox.DefaultContainerPrefix)
	}
	if c.Config.Image != "openclaw-sandbox:bookworm-slim" || c.Config.User != "1000:1000" {
		t.Errorf("image %q user %q", c.Config.Image, c.Config.User)
	}
	for _, kv := range []string{"FOO=bar", "SWITCHBOARD_SHELL=exec", "LANG=C.UTF-8"} {
		if !slices.Contains(c.Config.Env, kv) {
			t.Errorf("env %q lacks %s", c.Config.Env, kv)
		}
	}
	for _, kv := range c.Config.Env {
		k, _, _ := strings.Cut(kv, "=")
		if k == "PATH" || k == "HOME" {
			t.Errorf("the gateway's %s leaked into the container: %q", k, kv)
		}
	}
	h := c.HostConfig
	if h.NetworkMode != "none" || !h.ReadonlyRootfs || h.Init == nil || !*h.Init {
		t.Errorf("network %q readOnlyRoot %v init %v", h.NetworkMode, h.ReadonlyRootfs, h.Init)
	}
	if !slices.Equal(h.CapDrop, []string{"ALL"}) || !slices.Contains(h.SecurityOpt, "no-new-privileges") {
		t.Errorf("capDrop %q securityOpt %q", h.CapDrop, h.SecurityOpt)
	}
	if h.Memory != 512<<20 || h.NanoCPUs != 1_500_000_000 || h.PidsLimit == nil || *h.PidsLimit != 64 {
		t.Errorf("memory %d nanoCPUs %d pids %v", h.Memory, h.NanoCPUs, h.PidsLimit)
	}
	wantMounts := []mount.Mount{{Type: mount.TypeBind, Source: ws, Target: "/workspace"}}
	if diff := cmp.Diff(wantMounts, h.Mounts); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	if !slices.Equal(h.Binds, []string{extra + ":/data:ro"}) {
		t.Errorf("binds %q", h.Binds)
	}
	for _, p := range []string{"/tmp", "/var/tmp", "/run"} {
		if _, ok := h.Tmpfs[p]; !ok {
			t.Errorf("tmpfs %v lacks %s", h.Tmpfs, p)
		}
	}
	if len(h.DNS) != 1 || h.DNS[0].String() != "1.1.1.1" || !slices.Equal(h.ExtraHosts, []string{"svc:10.0.0.5"}) {
		t.Errorf("dns %v extraHosts %q", h.DNS, h.ExtraHosts)
	}
	waitFor(t, "every container removed", func() bool { return eng.Live() == 0 })
	if len(eng.Pulls()) != 0 {
		t.Errorf("pulled %q although the image was present", eng.Pulls())
	}
}

func TestDockerWorkspaceAccess(t *testing.T) {
	eng := dockertest.New(t, "img:1")
	eng.Run = fakeShell
	ws := tempWorkspace(t)
	d := sandbox.NewDocker(eng.Host)
	t.Cleanup(func() { _ = d.Close() })
	tests := []struct {
		access  string
		mounts  []mount.Mount
		workdir string
		tmpfs   string
	}{
		{"ro", []mount.Mount{{Type: mount.TypeBind, Source: ws, Target: "/agent", ReadOnly: true}}, "/agent", "/workspace"},
		{"none", nil, "/workspace", "/workspace"},
	}
	for _, tc := range tests {
		t.Run(tc.access, func(t *testing.T) {
			spec := sandbox.Spec{Backend: "docker", WorkspaceAccess: tc.access, Docker: sandbox.DockerSpec{Image: "img:1"}}
			res, err := call(t, shell.New(shell.Config{}).WithRunner(runner{d, spec}), ws, map[string]any{"command": "echo hi; pwd"})
			if err != nil {
				t.Fatal(err)
			}
			if want := "hi\n" + tc.workdir + "\n"; res.Text != want {
				t.Errorf("text = %q, want %q", res.Text, want)
			}
			created := eng.Created()
			h := created[len(created)-1].HostConfig
			if diff := cmp.Diff(tc.mounts, h.Mounts); diff != "" {
				t.Errorf("mounts (-want +got):\n%s", diff)
			}
			if _, ok := h.Tmpfs[tc.tmpfs]; !ok {
				t.Errorf("tmpfs %v lacks %s", h.Tmpfs, tc.tmpfs)
			}
		})
	}
}

func TestDockerTimeoutKillsContainer(t *testing.T) {
	eng := dockertest.New(t, "openclaw-sandbox:bookworm-slim")
	eng.Run = fakeShell
	ws := tempWorkspace(t)
	d := sandbox.NewDocker(eng.Host)
	t.Cleanup(func() { _ = d.Close() })
	tool := shell.New(shell.Config{}).WithRunner(runner{d, sandbox.Spec{Backend: "docker"}})
	start := time.Now()
	res, err := call(t, tool, ws, map[string]any{"command": "sleep 60", "timeoutSeconds": 1})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("the timeout took %v", took)
	}
	if !strings.HasPrefix(res.Text, "sleeping\n\n\nCommand timed out after 1 seconds.") {
		t.Errorf("text = %q", res.Text)
	}
	if det := res.Details.(*shell.Details); !det.TimedOut || det.Status != "failed" {
		t.Errorf("details %+v", det)
	}
	if len(eng.Killed()) != 1 {
		t.Errorf("killed %q, want the one container", eng.Killed())
	}
	waitFor(t, "the container removed", func() bool { return eng.Live() == 0 })
}

func TestDockerBackgroundAndProcess(t *testing.T) {
	eng := dockertest.New(t, "openclaw-sandbox:bookworm-slim")
	eng.Run = fakeShell
	ws := tempWorkspace(t)
	d := sandbox.NewDocker(eng.Host)
	t.Cleanup(func() { _ = d.Close() })
	jobs := shell.NewJobs(shell.JobsConfig{})
	t.Cleanup(jobs.Close)
	tool := shell.New(shell.Config{Jobs: jobs}).WithRunner(runner{d, sandbox.Spec{Backend: "docker"}})
	proc := shell.NewProcessTool(jobs)

	res, err := call(t, tool, ws, map[string]any{"command": "cat", "background": true})
	if err != nil {
		t.Fatal(err)
	}
	det := res.Details.(*shell.Details)
	if det.Status != "running" || det.SessionID == "" {
		t.Fatalf("exec: %q %+v", res.Text, det)
	}
	if c := eng.Created()[0].Config; !c.OpenStdin || !c.AttachStdin || !c.StdinOnce {
		t.Errorf("stdin not open: %+v", c)
	}
	if _, err := call(t, proc, ws, map[string]any{"action": "write", "sessionId": det.SessionID, "data": "hello\n", "eof": true}); err != nil {
		t.Fatal(err)
	}
	text := pollUntilExited(t, proc, ws, det.SessionID)
	if !strings.Contains(text, "hello") || !strings.Contains(text, "Process exited with code 0.") {
		t.Errorf("poll = %q", text)
	}

	// A second one, killed through the process tool.
	res, err = call(t, tool, ws, map[string]any{"command": "sleep 60", "background": true})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Details.(*shell.Details).SessionID
	r, err := call(t, proc, ws, map[string]any{"action": "kill", "sessionId": id})
	if err != nil {
		t.Fatal(err)
	}
	if r.Text != "Killed session "+id+"." {
		t.Errorf("kill = %q", r.Text)
	}
	waitFor(t, "both containers removed", func() bool { return eng.Live() == 0 })
}

func TestDockerPullsMissingImage(t *testing.T) {
	eng := dockertest.New(t)
	eng.Run = fakeShell
	d := sandbox.NewDocker(eng.Host)
	t.Cleanup(func() { _ = d.Close() })
	tool := shell.New(shell.Config{}).WithRunner(runner{d, sandbox.Spec{Backend: "docker", Docker: sandbox.DockerSpec{Image: "alpine:3.20"}}})
	res, err := call(t, tool, tempWorkspace(t), map[string]any{"command": "echo hi; pwd"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "hi\n/workspace\n" {
		t.Errorf("text = %q", res.Text)
	}
	if got := eng.Pulls(); !slices.Equal(got, []string{"docker.io/library/alpine:3.20"}) {
		t.Errorf("pulls = %q", got)
	}
}

func TestDockerFailsClosed(t *testing.T) {
	ws := tempWorkspace(t)
	t.Run("daemon unreachable", func(t *testing.T) {
		host := "unix://" + filepath.Join(t.TempDir(), "no-docker.sock")
		d := sandbox.NewDocker(host)
		t.Cleanup(func() { _ = d.Close() })
		if err := d.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "Docker daemon unreachable at "+host) {
			t.Errorf("Check = %v", err)
		}
		marker := filepath.Join(ws, "ran")
		tool := shell.New(shell.Config{}).WithRunner(runner{d, sandbox.Spec{Backend: "docker"}})
		_, err := call(t, tool, ws, map[string]any{"command": "touch " + marker})
		if err == nil || !strings.Contains(err.Error(), "Docker daemon unreachable") || !strings.Contains(err.Error(), "start Docker") {
			t.Errorf("exec err = %v, want the unreachable daemon named with the fix", err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Error("the command ran on the host")
		}
	})
	t.Run("pull fails", func(t *testing.T) {
		eng := dockertest.New(t)
		eng.PullError = "pull access denied for nosuch, repository does not exist"
		d := sandbox.NewDocker(eng.Host)
		t.Cleanup(func() { _ = d.Close() })
		tool := shell.New(shell.Config{}).WithRunner(runner{d, sandbox.Spec{Backend: "docker", Docker: sandbox.DockerSpec{Image: "nosuch:1"}}})
		_, err := call(t, tool, ws, map[string]any{"command": "echo hi; pwd"})
		if err == nil || !strings.Contains(err.Error(), "could not be pulled") || !strings.Contains(err.Error(), "pull access denied") {
			t.Errorf("err = %v", err)
		}
		if len(eng.Created()) != 0 {
			t.Errorf("created %d containers", len(eng.Created()))
		}
	})
}

func TestDockerSpecRefusals(t *testing.T) {
	home, _ := os.UserHomeDir()
	tests := []struct {
		name string
		d    sandbox.DockerSpec
		err  string
	}{
		{"host network", sandbox.DockerSpec{Network: "host"}, `network "host" is blocked`},
		{"container network", sandbox.DockerSpec{Network: "container:abc"}, "is blocked"},
		{"bind etc", sandbox.DockerSpec{Binds: []string{"/etc:/etc:ro"}}, "blocked source"},
		{"bind under run", sandbox.DockerSpec{Binds: []string{"/var/run/docker.sock:/var/run/docker.sock"}}, "Docker socket"},
		{"bind root", sandbox.DockerSpec{Binds: []string{"/:/host:ro"}}, "blocked source"},
		{"bind ssh", sandbox.DockerSpec{Binds: []string{filepath.Join(home, ".ssh") + ":/k:ro"}}, "blocked"},
		{"bind relative", sandbox.DockerSpec{Binds: []string{"src:/src"}}, "absolute"},
		{"bind mode", sandbox.DockerSpec{Binds: []string{"/srv/x:/x:rwx"}}, "unknown mode"},
		{"memory", sandbox.DockerSpec{Memory: "lots"}, "docker.memory"},
		{"dns", sandbox.DockerSpec{DNS: []string{"dns.example"}}, "not an IP"},
		{"relative workdir", sandbox.DockerSpec{Workdir: "work"}, "absolute"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := sandbox.Spec{Backend: "docker", Docker: tc.d}.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Validate = %v, want %q", err, tc.err)
			}
		})
	}
	if err := (sandbox.Spec{Backend: "podman"}).Validate(); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("podman: %v", err)
	}
	if err := (sandbox.Spec{Backend: "docker", Docker: sandbox.DockerSpec{Network: "bridge", Binds: []string{"/srv/data:/data:ro"}}}).Validate(); err != nil {
		t.Errorf("valid spec refused: %v", err)
	}
}

func TestDockerExplain(t *testing.T) {
	eng := dockertest.New(t)
	t.Setenv("DOCKER_HOST", eng.Host)
	spec := sandbox.Spec{Backend: "docker", WorkspaceAccess: "ro", Docker: sandbox.DockerSpec{
		Image: "img:2", Network: "bridge", Memory: "1g", CPUs: 2, Env: map[string]string{"TOKEN": "secret"},
	}}
	out := spec.Explain("/ws")
	for _, want := range []string{
		"backend: docker (Engine API at " + eng.Host, "image: img:2", "workspace: /ws read-only at /agent",
		"network: bridge", "memory 1073741824 bytes", "cpus 2", "pids 256", "env: TOKEN (values not shown)", "status: available",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "secret") {
		t.Errorf("explain shows an env value:\n%s", out)
	}
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	if out := spec.Explain("/ws"); !strings.Contains(out, "status: sandbox unavailable: Docker daemon unreachable at unix:///nonexistent/docker.sock") {
		t.Errorf("explain without a daemon:\n%s", out)
	}
}

// TestRealDocker runs a command through a real Docker daemon. It needs
// SWITCHBOARD_TEST_DOCKER=1 and a daemon (DOCKER_HOST or the default
// socket); SWITCHBOARD_TEST_DOCKER_IMAGE picks the image (alpine:3.20).
func TestRealDocker(t *testing.T) {
	if os.Getenv("SWITCHBOARD_TEST_DOCKER") != "1" {
		t.Skip("set SWITCHBOARD_TEST_DOCKER=1 to run against a real Docker daemon")
	}
	image := os.Getenv("SWITCHBOARD_TEST_DOCKER_IMAGE")
	if image == "" {
		image = "alpine:3.20"
	}
	d := sandbox.NewDocker("")
	t.Cleanup(func() { _ = d.Close() })
	if err := d.Check(context.Background()); err != nil {
		t.Fatalf("SWITCHBOARD_TEST_DOCKER=1 but: %v", err)
	}
	ws := tempWorkspace(t)
	if err := os.WriteFile(filepath.Join(ws, "in.txt"), []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tool := shell.New(shell.Config{}).WithRunner(runner{d, sandbox.Spec{Backend: "docker", WorkspaceAccess: "ro", Docker: sandbox.DockerSpec{Image: image}}})
	res, err := call(t, tool, ws, map[string]any{"command": "cat in.txt; pwd; touch x 2>/dev/null || echo read-only; exit 4"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "from the host\n/agent\nread-only\n\n\n(Command exited with code 4)"; res.Text != want {
		t.Errorf("text = %q, want %q", res.Text, want)
	}
	res, err = call(t, tool, ws, map[string]any{"command": "sleep 30", "timeoutSeconds": 1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Text, "Command timed out after 1 seconds.") {
		t.Errorf("timeout: %q", res.Text)
	}
}

// pollUntilExited polls the background command id through the process
// tool until it reports its exit (at most 50 polls of 200 ms) and
// returns everything the polls printed.
func pollUntilExited(t *testing.T, proc tools.Tool, ws string, id string) string {
	t.Helper()
	var text string
	for i := 0; i < 50 && !strings.Contains(text, "exited"); i++ {
		r, err := call(t, proc, ws, map[string]any{"action": "poll", "sessionId": id, "timeout": 200})
		if err != nil {
			t.Fatal(err)
		}
		text += r.Text
	}
	return text
}
