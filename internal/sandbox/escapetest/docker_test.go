package escapetest

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/switchboardhq/switchboard/internal/sandbox"
	"github.com/switchboardhq/switchboard/internal/sandbox/dockertest"
)

const dockerAgent = `{ id: "main", default: true, sandbox: { mode: "all", backend: "docker", workspaceAccess: "rw",
  docker: { image: "team/sbx:1", memory: "512m", pidsLimit: 64 } } }`

// The gateway binary, configured with sandbox.backend "docker", runs a
// sandboxed session's exec in a container of the daemon DOCKER_HOST names
// (a fake Engine here): the command, its workspace mount and limits reach
// the Engine, the output and exit text reach the model, the timeout kills
// the container, and none of the gateway's environment goes in.
func TestDockerBackendThroughGateway(t *testing.T) {
	eng := dockertest.New(t, "team/sbx:1")
	eng.Run = func(e *dockertest.Exec) int {
		line := e.Cmd[len(e.Cmd)-1]
		if strings.HasPrefix(line, "sleep") {
			<-e.Killed
			return 137
		}
		fmt.Fprintf(e.Stdout, "ran %q in %s\n", line, e.WorkingDir)
		for _, kv := range e.Env {
			if strings.Contains(kv, token) {
				fmt.Fprintln(e.Stdout, "LEAKED", kv)
			}
		}
		return 2
	}
	g := start(t, dockerAgent, `tools: { exec: { timeoutSeconds: 20 } },`, "DOCKER_HOST="+eng.Host, "SWITCHBOARD_GATEWAY_TOKEN="+token)
	key := "agent:main:main"
	got := g.tool(t, key, "d1", "exec", map[string]any{"command": "echo hi; pwd"})
	if want := "ran \"echo hi; pwd\" in /workspace\n\n\n(Command exited with code 2)"; got != want {
		t.Errorf("exec = %q, want %q", got, want)
	}
	created := eng.Created()
	if len(created) != 1 {
		t.Fatalf("%d containers created, want 1", len(created))
	}
	c := created[0]
	if c.Config.Image != "team/sbx:1" || !slices.Equal(ranCommand(eng, c), []string{"/bin/sh", "-c", "echo hi; pwd"}) {
		t.Errorf("config %+v, execs %+v", c.Config, eng.Execs())
	}
	h := c.HostConfig
	if len(h.Mounts) != 1 || h.Mounts[0].Target != "/workspace" || !strings.HasPrefix(h.Mounts[0].Source, g.dir) || h.Mounts[0].ReadOnly {
		t.Errorf("mounts %+v, want the workspace under %s read-write at /workspace", h.Mounts, g.dir)
	}
	if h.NetworkMode != "none" || h.Memory != 512<<20 || h.PidsLimit == nil || *h.PidsLimit != 64 || !h.ReadonlyRootfs {
		t.Errorf("network %q memory %d pids %v readOnlyRoot %v", h.NetworkMode, h.Memory, h.PidsLimit, h.ReadonlyRootfs)
	}

	got = g.tool(t, key, "d2", "exec", map[string]any{"command": "sleep 60", "timeoutSeconds": 1})
	if !strings.HasPrefix(got, "Command timed out after 1 seconds.") {
		t.Errorf("timeout = %q", got)
	}
	if len(eng.Killed())+len(eng.KillMarkers()) != 1 {
		t.Errorf("killed %q, kill scripts for %q: want the sleeping container or its exec killed", eng.Killed(), eng.KillMarkers())
	}
}

// ranCommand returns the first command run for container c: its own
// command, or with a scope's long-lived container the first exec in it.
func ranCommand(eng *dockertest.Engine, c dockertest.Created) []string {
	if c.Config.Labels["dev.switchboard.sandbox"] != "scope" {
		return c.Config.Cmd
	}
	for _, x := range eng.Execs() {
		if len(x.Cmd) > 1 && x.Cmd[1] == "-c" {
			return x.Cmd
		}
	}
	return nil
}

// Without a reachable Docker daemon a sandboxed run fails closed before
// the model is called, naming the daemon and the fix.
func TestDockerBackendUnreachableFailsClosed(t *testing.T) {
	host := "unix://" + t.TempDir() + "/docker.sock"
	g := start(t, dockerAgent, ``, "DOCKER_HOST="+host)
	w := g.send(t, "agent:main:main", "u1", "exec", map[string]any{"command": "echo hi"})
	e, _ := w["error"].(string)
	if w["status"] != "error" || !strings.Contains(e, "Docker daemon unreachable at "+host) || !strings.Contains(e, "start Docker") {
		t.Errorf("run = %v", w)
	}
	if n := len(g.llm.Requests()); n != 0 {
		t.Errorf("the model was called %d times", n)
	}
}

// TestRealDockerScope runs commands of one scope through a real Docker
// daemon: they share one long-lived container (its /tmp survives between
// commands), setupCommand runs once, Kill ends a process that left the
// command's session, and a new backend (a gateway restart) reuses the
// container without setting it up again. It needs SWITCHBOARD_TEST_DOCKER=1
// and a daemon (DOCKER_HOST or the default socket);
// SWITCHBOARD_TEST_DOCKER_IMAGE picks the image (alpine:3.20).
func TestRealDockerScope(t *testing.T) {
	if os.Getenv("SWITCHBOARD_TEST_DOCKER") != "1" {
		t.Skip("set SWITCHBOARD_TEST_DOCKER=1 to run against a real Docker daemon")
	}
	image := cmp.Or(os.Getenv("SWITCHBOARD_TEST_DOCKER_IMAGE"), "alpine:3.20")
	d := sandbox.NewDocker("")
	t.Cleanup(func() { _ = d.Close() })
	if err := d.Check(context.Background()); err != nil {
		t.Fatalf("SWITCHBOARD_TEST_DOCKER=1 but: %v", err)
	}
	key := fmt.Sprintf("escapetest-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { removeScope(t, key) })
	spec := sandbox.Spec{
		Backend: "docker", WorkspaceAccess: "none", ScopeKey: key, ScopeDir: filepath.Join(t.TempDir(), "scope"),
		Docker: sandbox.DockerSpec{
			Image: image, User: fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()),
			SetupCommand: "echo setup >> /workspace/setup.log",
			Ulimits:      map[string]sandbox.Ulimit{"nofile": {Soft: 512, Hard: 1024}},
		},
	}
	run := func(d *sandbox.Docker, line string) string {
		t.Helper()
		var out syncBuffer
		c, err := d.Start(context.Background(), spec, sandbox.Run{Argv: []string{"/bin/sh", "-c", line}, Output: &out})
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		code, sig, err := c.Wait()
		if err != nil || code != 0 || sig != "" {
			t.Fatalf("%s: exit %d %q %v; output %q", line, code, sig, err, out.String())
		}
		return out.String()
	}
	if got := run(d, "echo state > /tmp/state; cat /workspace/setup.log; ulimit -n"); got != "setup\n512\n" {
		t.Errorf("first command = %q, want the setup's log and the nofile limit", got)
	}
	if got := run(d, "cat /tmp/state /workspace/setup.log"); got != "state\nsetup\n" {
		t.Errorf("second command = %q, want the first's /tmp and one setup", got)
	}

	// Kill ends a process that left the command's session.
	var out syncBuffer
	c, err := d.Start(context.Background(), spec, sandbox.Run{Argv: []string{"/bin/sh", "-c", "setsid sh -c 'sleep 1001' & sleep 1002"}, Output: &out})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	c.Kill()
	if _, sig, err := c.Wait(); sig != "SIGKILL" || err != nil {
		t.Errorf("wait after kill = %q, %v", sig, err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("kill and wait took %v", took)
	}
	left := run(d, `for p in /proc/[0-9]*; do tr '\0' ' ' < "$p/cmdline" 2>/dev/null; echo; done | grep -c 'sleep 100[12]' || true`)
	if strings.TrimSpace(left) != "0" {
		t.Errorf("%s processes of the killed command are left", strings.TrimSpace(left))
	}

	// A restart finds the container again; setup does not run again.
	_ = d.Close()
	d2 := sandbox.NewDocker("")
	t.Cleanup(func() { _ = d2.Close() })
	if got := run(d2, "cat /tmp/state /workspace/setup.log"); got != "state\nsetup\n" {
		t.Errorf("after a restart = %q, want the same container, set up once", got)
	}
}

// removeScope removes the test's scope containers, and only them.
func removeScope(t *testing.T, key string) {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Error(err)
		return
	}
	defer cli.Close()
	ctx := context.Background()
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", "dev.switchboard.sandbox.key="+key)})
	if err != nil {
		t.Error(err)
		return
	}
	for _, c := range res.Items {
		if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
			t.Error(err)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the output copier and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Through the gateway, the Docker backend keeps one container per scope:
// under scope "session" each session gets its own, its later commands
// run in it, setupCommand runs once per container, the scope's private
// workspace (workspaceAccess none) is bound at /workspace, and ulimits
// and gpus reach the Engine.
func TestDockerScopeThroughGateway(t *testing.T) {
	eng := dockertest.New(t, "team/sbx:1")
	var setups sync.Map
	eng.Run = func(e *dockertest.Exec) int {
		line := e.Cmd[len(e.Cmd)-1]
		if len(e.Cmd) == 3 && e.Cmd[1] == "-lc" {
			n, _ := setups.LoadOrStore(line, new(int))
			*n.(*int)++
			return 0
		}
		fmt.Fprintf(e.Stdout, "ran %q in %s\n", line, e.WorkingDir)
		return 0
	}
	g := start(t, `{ id: "main", default: true, sandbox: { mode: "all", backend: "docker", scope: "session",
  docker: { image: "team/sbx:1", setupCommand: "echo setup", gpus: "all", ulimits: { nofile: { soft: 1024, hard: 2048 } } } } }`, ``, "DOCKER_HOST="+eng.Host)
	for i, key := range []string{"agent:main:one", "agent:main:one", "agent:main:two"} {
		got := g.tool(t, key, fmt.Sprint("s", i), "exec", map[string]any{"command": fmt.Sprint("echo ", i)})
		if want := fmt.Sprintf("ran \"echo %d\" in /workspace\n", i); got != want {
			t.Errorf("%s exec = %q, want %q", key, got, want)
		}
	}
	created := eng.Created()
	if len(created) != 2 {
		t.Fatalf("%d containers created for two sessions, want 2", len(created))
	}
	for _, c := range created {
		if c.Config.Labels["dev.switchboard.sandbox"] != "scope" {
			t.Errorf("container %s labels %v", c.Name, c.Config.Labels)
		}
		h := c.HostConfig
		if len(h.Mounts) != 1 || h.Mounts[0].Target != "/workspace" || !strings.HasPrefix(h.Mounts[0].Source, filepath.Join(g.dir, "sandboxes", "session-agent-main-")) {
			t.Errorf("mounts %+v, want the session's sandbox workspace at /workspace", h.Mounts)
		}
		if len(h.Ulimits) != 1 || h.Ulimits[0].Name != "nofile" || h.Ulimits[0].Soft != 1024 || h.Ulimits[0].Hard != 2048 {
			t.Errorf("ulimits %+v", h.Ulimits)
		}
		if len(h.DeviceRequests) != 1 || h.DeviceRequests[0].Count != -1 {
			t.Errorf("device requests %+v, want all GPUs", h.DeviceRequests)
		}
	}
	if n, _ := setups.Load("echo setup"); n == nil || *n.(*int) != 2 {
		t.Errorf("setupCommand ran %v times, want once per container (2)", n)
	}
}

// The Docker backend binds the scope's private workspace too, and the
// same quota holds there: a command whose container fills the workspace
// (the fake Engine writes through to the bound host directory, as a bind
// mount does) is killed once it passes workspaceQuota, the model reads
// why, and the next command is refused until files are removed.
func TestDockerWorkspaceQuota(t *testing.T) {
	eng := dockertest.New(t, "team/sbx:1")
	g := start(t, `{ id: "main", default: true, sandbox: { mode: "all", backend: "docker", workspaceAccess: "none", workspaceQuota: "1mb",
  docker: { image: "team/sbx:1" } } }`, `tools: { exec: { timeoutSeconds: 60 } },`, "DOCKER_HOST="+eng.Host)
	ws := filepath.Join(g.dir, "sandboxes", "agent-main")
	eng.Run = func(e *dockertest.Exec) int {
		if line := e.Cmd[len(e.Cmd)-1]; line != "fill" {
			fmt.Fprintf(e.Stdout, "ran %q\n", line)
			return 0
		}
		chunk := make([]byte, 64<<10)
		for i := 0; i < 4096; i++ { // 256 MiB unless killed
			select {
			case <-e.Killed:
				return 137
			default:
			}
			if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d", i)), chunk, 0o600); err != nil {
				fmt.Fprintln(e.Stdout, "write:", err)
				return 1
			}
		}
		fmt.Fprintln(e.Stdout, "all written")
		return 0
	}
	key := "agent:main:main"
	got := g.tool(t, key, "q1", "exec", map[string]any{"command": "fill", "yieldMs": 60000})
	used := dirBytes(t, ws)
	t.Logf("workspace holds %d bytes after the fill, quota %d", used, 1<<20)
	if strings.Contains(got, "all written") || !strings.Contains(got, "went over its quota of 1048576 bytes") {
		t.Fatalf("fill through the Docker backend = %q (workspace %d bytes)", got, used)
	}
	if used > 1<<20+quotaSlack {
		t.Fatalf("workspace holds %d bytes, over the quota plus the slack", used)
	}
	if got := g.tool(t, key, "q2", "exec", map[string]any{"command": "echo next"}); !strings.Contains(got, "over its quota of 1048576 bytes") {
		t.Fatalf("command in a full workspace = %q", got)
	}
}
