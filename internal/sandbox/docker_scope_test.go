package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/switchboardhq/switchboard/internal/sandbox"
	"github.com/switchboardhq/switchboard/internal/sandbox/dockertest"
	"github.com/switchboardhq/switchboard/internal/tools/shell"
)

const scopeImage = "openclaw-sandbox:bookworm-slim"

// setupCounter answers fakeShell's commands and counts (and may fail)
// the setupCommand execs (sh -lc …).
type setupCounter struct {
	n    atomic.Int32
	fail bool
}

func (s *setupCounter) run(e *dockertest.Exec) int {
	if len(e.Cmd) == 3 && e.Cmd[0] == "sh" && e.Cmd[1] == "-lc" {
		s.n.Add(1)
		if s.fail {
			fmt.Fprintln(e.Stdout, "Reading package lists...")
			fmt.Fprintln(e.Stderr, "E: Unable to locate package jq")
			return 100
		}
		return 0
	}
	return fakeShell(e)
}

// scopeEngine is a fake engine whose Run counts setups.
func scopeEngine(t *testing.T) (*dockertest.Engine, *setupCounter) {
	t.Helper()
	eng := dockertest.New(t, scopeImage)
	sc := &setupCounter{}
	eng.Run = sc.run
	return eng, sc
}

func newDocker(t *testing.T, eng *dockertest.Engine) *sandbox.Docker {
	t.Helper()
	d := sandbox.NewDocker(eng.Host)
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// commandExecs returns the execs of commands (neither setup nor kill).
func commandExecs(eng *dockertest.Engine) []dockertest.ExecRecord {
	var out []dockertest.ExecRecord
	for _, x := range eng.Execs() {
		if len(x.Cmd) == 3 && x.Cmd[0] == "/bin/sh" && x.Cmd[1] == "-c" && !strings.Contains(x.Cmd[2], "grep -qx") {
			out = append(out, x)
		}
	}
	return out
}

func markerOf(t *testing.T, env []string) string {
	t.Helper()
	for _, kv := range env {
		if strings.HasPrefix(kv, sandbox.ExecMarkerVar+"=") && len(kv) > len(sandbox.ExecMarkerVar)+8 {
			return kv
		}
	}
	t.Fatalf("env %q lacks %s", env, sandbox.ExecMarkerVar)
	return ""
}

func TestDockerScopeOneContainerAcrossCommands(t *testing.T) {
	eng, _ := scopeEngine(t)
	ws := tempWorkspace(t)
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	d := newDocker(t, eng)
	spec := sandbox.Spec{Backend: "docker", ScopeKey: "main", Docker: sandbox.DockerSpec{User: "1000:1000", Env: map[string]string{"FOO": "bar"}}}
	tool := shell.New(shell.Config{}).WithRunner(runner{d, spec})
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"command": "echo hi; pwd"}, "hi\n/workspace\n"},
		{map[string]any{"command": "echo hi; pwd", "workdir": "sub"}, "hi\n/workspace/sub\n"},
		{map[string]any{"command": "echo out; echo err >&2; exit 3"}, "out\nerr\n\n\n(Command exited with code 3)"},
		{map[string]any{"command": "env", "env": map[string]any{sandbox.ExecMarkerVar: "mine"}}, ""},
	} {
		res, err := call(t, tool, ws, tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if tc.want != "" && res.Text != tc.want {
			t.Errorf("%v: text = %q, want %q", tc.args, res.Text, tc.want)
		}
		if tc.args["command"] == "env" {
			for _, kv := range []string{"FOO=bar", "LANG=C.UTF-8", "SWITCHBOARD_SHELL=exec", sandbox.ExecMarkerVar + "="} {
				if !strings.Contains(res.Text, kv) {
					t.Errorf("env output %q lacks %s", res.Text, kv)
				}
			}
			if strings.Contains(res.Text, sandbox.ExecMarkerVar+"=mine") {
				t.Errorf("the call's own %s hides the marker: %q", sandbox.ExecMarkerVar, res.Text)
			}
		}
	}
	created := eng.Created()
	if len(created) != 1 {
		t.Fatalf("%d containers created for one scope, want 1", len(created))
	}
	c := created[0]
	if !strings.HasPrefix(c.Name, sandbox.DefaultContainerPrefix+"main-") {
		t.Errorf("name %q, want %smain-<hash>", c.Name, sandbox.DefaultContainerPrefix)
	}
	if l := c.Config.Labels; l["dev.switchboard.sandbox"] != "scope" || l["dev.switchboard.sandbox.key"] != "main" ||
		l["dev.switchboard.sandbox.scope"] != "agent" || l["dev.switchboard.sandbox.config"] == "" {
		t.Errorf("labels %v", l)
	}
	if slices.Contains(c.Config.Cmd, "echo hi; pwd") || c.HostConfig.Init == nil || !*c.HostConfig.Init {
		t.Errorf("the scope container runs %q (init %v), want a keep-alive under init", c.Config.Cmd, c.HostConfig.Init)
	}
	execs := commandExecs(eng)
	if len(execs) != 4 {
		t.Fatalf("%d command execs, want 4: %+v", len(execs), execs)
	}
	markers := map[string]bool{}
	for i, x := range execs {
		if x.User != "1000:1000" {
			t.Errorf("exec %d user %q", i, x.User)
		}
		markers[markerOf(t, x.Env)] = true
	}
	if len(markers) != 4 {
		t.Errorf("markers are not unique per command: %v", markers)
	}
	if execs[0].WorkingDir != "/workspace" || execs[1].WorkingDir != "/workspace/sub" {
		t.Errorf("working dirs %q %q", execs[0].WorkingDir, execs[1].WorkingDir)
	}
	if eng.Live() != 1 || len(eng.Removed()) != 0 || len(eng.Killed()) != 0 {
		t.Errorf("live %d removed %q killed %q: the scope container must stay", eng.Live(), eng.Removed(), eng.Killed())
	}
}

func TestDockerScopeConcurrentStartsShareOneContainer(t *testing.T) {
	eng, sc := scopeEngine(t)
	d := newDocker(t, eng)
	spec := sandbox.Spec{Backend: "docker", WorkspaceAccess: "none", ScopeKey: "agent-x", Docker: sandbox.DockerSpec{SetupCommand: "true"}}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := d.Start(context.Background(), spec, sandbox.Run{Argv: []string{"/bin/sh", "-c", "echo hi; pwd"}})
			if err != nil {
				errs <- err
				return
			}
			if code, _, err := c.Wait(); err != nil || code != 0 {
				errs <- fmt.Errorf("wait = %d, %v", code, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(eng.Created()); n != 1 {
		t.Errorf("%d containers created by concurrent starts, want 1", n)
	}
	if n := sc.n.Load(); n != 1 {
		t.Errorf("setupCommand ran %d times, want 1", n)
	}
}

func TestDockerScopeKeys(t *testing.T) {
	eng, _ := scopeEngine(t)
	d := newDocker(t, eng)
	ws := tempWorkspace(t)
	run := func(spec sandbox.Spec) {
		t.Helper()
		if _, err := call(t, shell.New(shell.Config{}).WithRunner(runner{d, spec}), ws, map[string]any{"command": "echo hi; pwd"}); err != nil {
			t.Fatal(err)
		}
	}
	session := func(key string) sandbox.Spec {
		return sandbox.Spec{Backend: "docker", WorkspaceAccess: "none", Scope: "session", ScopeKey: key}
	}
	run(session("agent:main:a"))
	run(session("agent:main:b"))
	run(session("agent:main:a"))
	created := eng.Created()
	if len(created) != 2 || created[0].Name == created[1].Name {
		t.Fatalf("session scope: created %d containers (%v), want 2 with different names", len(created), eng.Names())
	}
	for _, c := range created {
		if c.Config.Labels["dev.switchboard.sandbox.scope"] != "session" {
			t.Errorf("labels %v", c.Config.Labels)
		}
	}
	if !strings.Contains(created[0].Name, "agent-main-a-") {
		t.Errorf("name %q lacks the key's slug", created[0].Name)
	}
	// Shared: the sessions of two agents use one container.
	shared := sandbox.Spec{Backend: "docker", WorkspaceAccess: "none", Scope: "shared", ScopeKey: "shared"}
	run(shared)
	run(shared)
	if n := len(eng.Created()); n != 3 {
		t.Errorf("shared scope: %d containers in all, want 3", n)
	}
	if eng.Live() != 3 {
		t.Errorf("live %d, want 3", eng.Live())
	}
}

func TestDockerScopeSetupOnce(t *testing.T) {
	eng, sc := scopeEngine(t)
	d := newDocker(t, eng)
	ws := tempWorkspace(t)
	spec := sandbox.Spec{Backend: "docker", ScopeKey: "main", Docker: sandbox.DockerSpec{
		User: "1000:1000", SetupCommand: "apt-get update && apt-get install -y jq",
	}}
	tool := shell.New(shell.Config{}).WithRunner(runner{d, spec})
	for range 3 {
		if res, err := call(t, tool, ws, map[string]any{"command": "echo hi; pwd"}); err != nil || res.Text != "hi\n/workspace\n" {
			t.Fatalf("exec = %v, %v", res, err)
		}
	}
	if n := sc.n.Load(); n != 1 {
		t.Errorf("setupCommand ran %d times, want once", n)
	}
	execs := eng.Execs()
	setup := execs[0]
	if want := []string{"sh", "-lc", "apt-get update && apt-get install -y jq"}; !slices.Equal(setup.Cmd, want) || setup.User != "1000:1000" {
		t.Errorf("first exec %q as %q, want the setupCommand as the container's user", setup.Cmd, setup.User)
	}
	created := eng.Created()
	if len(created) != 1 || !strings.HasSuffix(created[0].Name, "-setup") {
		t.Fatalf("created %+v, want one container named …-setup until set up", created)
	}
	if names := eng.Names(); len(names) != 1 || names[0] != strings.TrimSuffix(created[0].Name, "-setup") {
		t.Errorf("names %q after setup, want the final name", names)
	}
}

func TestDockerScopeSetupFailsClosed(t *testing.T) {
	eng, sc := scopeEngine(t)
	sc.fail = true
	d := newDocker(t, eng)
	ws := tempWorkspace(t)
	spec := sandbox.Spec{Backend: "docker", ScopeKey: "main", Docker: sandbox.DockerSpec{SetupCommand: "apt-get install -y jq"}}
	tool := shell.New(shell.Config{}).WithRunner(runner{d, spec})
	_, err := call(t, tool, ws, map[string]any{"command": "echo hi; pwd"})
	if err == nil {
		t.Fatal("the command ran although setupCommand failed")
	}
	for _, want := range []string{"setupCommand", "code 100", "Unable to locate package jq", "network", "readOnlyRoot", "non-root"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if len(commandExecs(eng)) != 0 {
		t.Errorf("commands ran: %+v", commandExecs(eng))
	}
	waitFor(t, "the failed container removed", func() bool { return eng.Live() == 0 })
	// The next command tries again with a new container.
	if _, err := call(t, tool, ws, map[string]any{"command": "echo hi; pwd"}); err == nil {
		t.Error("the second command ran")
	}
	if n := sc.n.Load(); n != 2 || len(eng.Created()) != 2 {
		t.Errorf("setup ran %d times in %d containers, want 2 and 2", n, len(eng.Created()))
	}
}

func TestDockerScopeConfigChangeRecreates(t *testing.T) {
	eng, _ := scopeEngine(t)
	d := newDocker(t, eng)
	ws := tempWorkspace(t)
	spec := sandbox.Spec{Backend: "docker", ScopeKey: "main", Docker: sandbox.DockerSpec{Memory: "512m"}}
	run := func(spec sandbox.Spec) {
		t.Helper()
		if _, err := call(t, shell.New(shell.Config{}).WithRunner(runner{d, spec}), ws, map[string]any{"command": "echo hi; pwd"}); err != nil {
			t.Fatal(err)
		}
	}
	run(spec)
	run(spec)
	spec.Docker.Memory = "1g"
	run(spec)
	created := eng.Created()
	if len(created) != 2 {
		t.Fatalf("%d containers created, want 2 (one per configuration)", len(created))
	}
	if created[0].Name == created[1].Name || created[1].HostConfig.Memory != 1<<30 {
		t.Errorf("names %q %q memory %d", created[0].Name, created[1].Name, created[1].HostConfig.Memory)
	}
	if eng.Live() != 1 || len(eng.Removed()) != 1 {
		t.Errorf("live %d removed %q, want the old container removed", eng.Live(), eng.Removed())
	}
	// A new backend (a gateway restart) with the old configuration
	// replaces it again.
	spec.Docker.Memory = "512m"
	d = newDocker(t, eng)
	run(spec)
	if eng.Live() != 1 || len(eng.Created()) != 3 {
		t.Errorf("live %d created %d", eng.Live(), len(eng.Created()))
	}
}

func TestDockerScopeKillByMarker(t *testing.T) {
	eng, _ := scopeEngine(t)
	d := newDocker(t, eng)
	ws := tempWorkspace(t)
	tool := shell.New(shell.Config{}).WithRunner(runner{d, sandbox.Spec{Backend: "docker", ScopeKey: "main", Docker: sandbox.DockerSpec{User: "1000"}}})
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
	sleep := commandExecs(eng)[0]
	marker := markerOf(t, sleep.Env)
	if got := eng.KillMarkers(); !slices.Equal(got, []string{marker}) {
		t.Errorf("kill markers %q, want the command's %q", got, marker)
	}
	var kill dockertest.ExecRecord
	for _, x := range eng.Execs() {
		if strings.Contains(strings.Join(x.Cmd, " "), "grep -qx") {
			kill = x
		}
	}
	script := strings.Join(kill.Cmd, " ")
	for _, want := range []string{"/proc/", `tr '\0' '\n'`, "grep -qx '" + marker + "'", "kill -9"} {
		if !strings.Contains(script, want) {
			t.Errorf("kill script lacks %q:\n%s", want, script)
		}
	}
	if kill.User != "1000" || kill.ContainerID != sleep.ContainerID || slices.Contains(kill.Env, marker) {
		t.Errorf("kill exec %+v: want the command's user and container, without the marker", kill)
	}
	if len(eng.Killed()) != 0 || eng.Live() != 1 {
		t.Errorf("killed %q live %d: the scope container must survive a command's kill", eng.Killed(), eng.Live())
	}
	// The container still runs commands.
	if res, err := call(t, tool, ws, map[string]any{"command": "echo hi; pwd"}); err != nil || res.Text != "hi\n/workspace\n" {
		t.Errorf("after the kill: %v, %v", res, err)
	}
}

func TestDockerScopeBackgroundStdinAndKill(t *testing.T) {
	eng, _ := scopeEngine(t)
	d := newDocker(t, eng)
	ws := tempWorkspace(t)
	jobs := shell.NewJobs(shell.JobsConfig{})
	t.Cleanup(jobs.Close)
	tool := shell.New(shell.Config{Jobs: jobs}).WithRunner(runner{d, sandbox.Spec{Backend: "docker", ScopeKey: "main"}})
	proc := shell.NewProcessTool(jobs)
	res, err := call(t, tool, ws, map[string]any{"command": "cat", "background": true})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Details.(*shell.Details).SessionID
	if x := commandExecs(eng)[0]; !x.AttachStdin {
		t.Errorf("stdin not attached: %+v", x)
	}
	if _, err := call(t, proc, ws, map[string]any{"action": "write", "sessionId": id, "data": "hello\n", "eof": true}); err != nil {
		t.Fatal(err)
	}
	text := pollUntilExited(t, proc, ws, id)
	if !strings.Contains(text, "hello") || !strings.Contains(text, "Process exited with code 0.") {
		t.Errorf("poll = %q", text)
	}
	res, err = call(t, tool, ws, map[string]any{"command": "sleep 60", "background": true})
	if err != nil {
		t.Fatal(err)
	}
	id = res.Details.(*shell.Details).SessionID
	if r, err := call(t, proc, ws, map[string]any{"action": "kill", "sessionId": id}); err != nil || r.Text != "Killed session "+id+"." {
		t.Fatalf("kill = %v, %v", r, err)
	}
	if len(eng.KillMarkers()) != 1 {
		t.Errorf("kill markers %q", eng.KillMarkers())
	}
}

func TestDockerScopeRestartReuses(t *testing.T) {
	eng, sc := scopeEngine(t)
	ws := tempWorkspace(t)
	spec := sandbox.Spec{Backend: "docker", ScopeKey: "main", Docker: sandbox.DockerSpec{SetupCommand: "touch /opt/ready"}}
	run := func(d *sandbox.Docker) {
		t.Helper()
		res, err := call(t, shell.New(shell.Config{}).WithRunner(runner{d, spec}), ws, map[string]any{"command": "echo hi; pwd"})
		if err != nil || res.Text != "hi\n/workspace\n" {
			t.Fatalf("exec = %v, %v", res, err)
		}
	}
	d1 := sandbox.NewDocker(eng.Host)
	run(d1)
	_ = d1.Close()
	id := eng.Created()[0]
	cid, _, _, _ := eng.Container(strings.TrimSuffix(id.Name, "-setup"))

	d2 := newDocker(t, eng)
	run(d2)
	if len(eng.Created()) != 1 || sc.n.Load() != 1 {
		t.Errorf("after a restart: created %d, setup ran %d times; want the container reused without setup", len(eng.Created()), sc.n.Load())
	}
	// Stopped (a host reboot): started again, not set up again.
	eng.Stop(cid)
	if _, _, running, _ := eng.Container(cid); running {
		t.Fatal("the container still runs")
	}
	d3 := newDocker(t, eng)
	run(d3)
	if len(eng.Created()) != 1 || sc.n.Load() != 1 {
		t.Errorf("after a reboot: created %d, setup ran %d times", len(eng.Created()), sc.n.Load())
	}
	if got := eng.Started(); !slices.Equal(got, []string{cid, cid}) {
		t.Errorf("started %q, want the container started again", got)
	}
	// Stopped behind a running backend's back: the exec is refused, the
	// container is started again.
	eng.Stop(cid)
	run(d3)
	if len(eng.Created()) != 1 || len(eng.Started()) != 3 {
		t.Errorf("created %d started %d", len(eng.Created()), len(eng.Started()))
	}
}

func TestDockerScopeSetupInterruptedIsReplaced(t *testing.T) {
	eng, sc := scopeEngine(t)
	ws := tempWorkspace(t)
	spec := sandbox.Spec{Backend: "docker", ScopeKey: "main", Docker: sandbox.DockerSpec{SetupCommand: "touch /opt/ready"}}
	d := newDocker(t, eng)
	run := func() {
		t.Helper()
		if _, err := call(t, shell.New(shell.Config{}).WithRunner(runner{d, spec}), ws, map[string]any{"command": "echo hi; pwd"}); err != nil {
			t.Fatal(err)
		}
	}
	run()
	// As if the gateway had stopped during setup: the container keeps its
	// pending name.
	name := eng.Created()[0].Name
	id, final, _, _ := eng.Container(strings.TrimSuffix(name, "-setup"))
	if final+"-setup" != name {
		t.Fatalf("names %q %q", name, final)
	}
	renamePending(t, eng, id, name)
	d = newDocker(t, eng)
	run()
	if len(eng.Created()) != 2 || sc.n.Load() != 2 || !slices.Contains(eng.Removed(), id) {
		t.Errorf("created %d setups %d removed %q: want the half-set-up container replaced", len(eng.Created()), sc.n.Load(), eng.Removed())
	}
}

// renamePending renames container id back to name through the Engine API.
func renamePending(t *testing.T, eng *dockertest.Engine, id, name string) {
	t.Helper()
	cli, err := client.New(client.WithHost(eng.Host))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.ContainerRename(context.Background(), id, client.ContainerRenameOptions{NewName: name}); err != nil {
		t.Fatal(err)
	}
}

func TestDockerScopeHostConfig(t *testing.T) {
	eng, _ := scopeEngine(t)
	d := newDocker(t, eng)
	ws := tempWorkspace(t)
	root := t.TempDir()
	tests := []struct {
		name   string
		access string
		gpus   string
		mounts func(scopeDir string) []mount.Mount
		dev    []container.DeviceRequest
	}{
		{"none", "none", "all", func(sd string) []mount.Mount {
			return []mount.Mount{{Type: mount.TypeBind, Source: sd, Target: "/workspace"}}
		}, []container.DeviceRequest{{Count: -1, Capabilities: [][]string{{"gpu"}}, Options: map[string]string{}}}},
		{"ro", "ro", "device=GPU-a,GPU-b", func(sd string) []mount.Mount {
			return []mount.Mount{{Type: mount.TypeBind, Source: ws, Target: "/agent", ReadOnly: true}, {Type: mount.TypeBind, Source: sd, Target: "/workspace"}}
		}, []container.DeviceRequest{{DeviceIDs: []string{"GPU-a", "GPU-b"}, Capabilities: [][]string{{"gpu"}}, Options: map[string]string{}}}},
		{"rw", "rw", "2", func(string) []mount.Mount {
			return []mount.Mount{{Type: mount.TypeBind, Source: ws, Target: "/workspace"}}
		}, []container.DeviceRequest{{Count: 2, Capabilities: [][]string{{"gpu"}}, Options: map[string]string{}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			scopeDir := filepath.Join(root, tc.name, "main")
			spec := sandbox.Spec{Backend: "docker", WorkspaceAccess: tc.access, ScopeKey: "main-" + tc.name, ScopeDir: scopeDir, Docker: sandbox.DockerSpec{
				GPUs: tc.gpus, MemorySwap: "-1",
				Ulimits: map[string]sandbox.Ulimit{"nofile": {Soft: 1024, Hard: 2048}, "nproc": {Soft: 256, Hard: 256}},
			}}
			if _, err := call(t, shell.New(shell.Config{}).WithRunner(runner{d, spec}), ws, map[string]any{"command": "echo hi; pwd"}); err != nil {
				t.Fatal(err)
			}
			created := eng.Created()
			h := created[len(created)-1].HostConfig
			if diff := cmp.Diff(tc.mounts(scopeDir), h.Mounts); diff != "" {
				t.Errorf("mounts (-want +got):\n%s", diff)
			}
			if _, ok := h.Tmpfs["/workspace"]; ok {
				t.Errorf("tmpfs %v hides the workspace mount", h.Tmpfs)
			}
			wantUl := []*container.Ulimit{{Name: "nofile", Soft: 1024, Hard: 2048}, {Name: "nproc", Soft: 256, Hard: 256}}
			if diff := cmp.Diff(wantUl, h.Ulimits); diff != "" {
				t.Errorf("ulimits (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.dev, h.DeviceRequests); diff != "" {
				t.Errorf("device requests (-want +got):\n%s", diff)
			}
			if h.MemorySwap != -1 {
				t.Errorf("memorySwap %d, want -1", h.MemorySwap)
			}
			fi, err := os.Stat(scopeDir)
			switch {
			case tc.access == "rw":
				if err == nil {
					t.Errorf("scope dir made although the workspace is mounted rw")
				}
			case err != nil:
				t.Errorf("scope dir: %v", err)
			case fi.Mode().Perm() != 0o700:
				t.Errorf("scope dir mode %v, want 0700", fi.Mode().Perm())
			}
		})
	}
}

func TestDockerUlimitsAndGPUsRefused(t *testing.T) {
	tests := []struct {
		name string
		d    sandbox.DockerSpec
		err  string
	}{
		{"unknown ulimit", sandbox.DockerSpec{Ulimits: map[string]sandbox.Ulimit{"files": {Soft: 1, Hard: 1}}}, "docker.ulimits.files: unknown limit"},
		{"soft above hard", sandbox.DockerSpec{Ulimits: map[string]sandbox.Ulimit{"nofile": {Soft: 4096, Hard: 1024}}}, "soft 4096 is above hard 1024"},
		{"negative", sandbox.DockerSpec{Ulimits: map[string]sandbox.Ulimit{"core": {Soft: -5, Hard: 0}}}, "want values"},
		{"gpus junk", sandbox.DockerSpec{GPUs: "lots"}, "docker.gpus \"lots\""},
		{"gpus key", sandbox.DockerSpec{GPUs: "vendor=nvidia"}, "unknown key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := sandbox.Spec{Backend: "docker", Docker: tc.d}.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Validate = %v, want %q", err, tc.err)
			}
		})
	}
	ok := sandbox.Spec{Backend: "docker", Docker: sandbox.DockerSpec{
		Ulimits: map[string]sandbox.Ulimit{"nofile": {Soft: 1024, Hard: 2048}, "memlock": {Soft: -1, Hard: -1}, "core": {}},
		GPUs:    `"device=0,1",capabilities=compute,driver=nvidia`,
	}}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid spec refused: %v", err)
	}
	body, err := ok.CreateBody(sandbox.Run{Workspace: "/ws", Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	// Read as the daemon reads it.
	var req container.CreateRequest
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	want := []container.DeviceRequest{{Driver: "nvidia", DeviceIDs: []string{"0", "1"}, Capabilities: [][]string{{"compute", "gpu"}}, Options: map[string]string{}}}
	if diff := cmp.Diff(want, req.HostConfig.DeviceRequests); diff != "" {
		t.Errorf("device requests (-want +got):\n%s", diff)
	}
}

func TestDockerPrune(t *testing.T) {
	eng, _ := scopeEngine(t)
	d := newDocker(t, eng)
	ws := tempWorkspace(t)
	jobs := shell.NewJobs(shell.JobsConfig{})
	t.Cleanup(jobs.Close)
	spec := func(key string) sandbox.Spec {
		return sandbox.Spec{Backend: "docker", WorkspaceAccess: "none", Scope: "session", ScopeKey: key}
	}
	if _, err := call(t, shell.New(shell.Config{}).WithRunner(runner{d, spec("idle")}), ws, map[string]any{"command": "echo hi; pwd"}); err != nil {
		t.Fatal(err)
	}
	busyTool := shell.New(shell.Config{Jobs: jobs}).WithRunner(runner{d, spec("busy")})
	res, err := call(t, busyTool, ws, map[string]any{"command": "sleep 60", "background": true})
	if err != nil {
		t.Fatal(err)
	}
	idleID, busyID := eng.Created()[0], eng.Created()[1]
	idle, _, _, _ := eng.Container(idleID.Name)
	busy, _, _, _ := eng.Container(busyID.Name)
	eng.Age(busy, 30*24*time.Hour)

	ctx := context.Background()
	removed, err := d.Prune(ctx, time.Hour, 7*24*time.Hour)
	if err != nil || len(removed) != 0 {
		t.Fatalf("prune with fresh use = %q, %v; want nothing removed", removed, err)
	}
	removed, err = d.Prune(ctx, time.Nanosecond, 7*24*time.Hour)
	if err != nil || !slices.Equal(removed, []string{idle}) {
		t.Fatalf("prune = %q, %v; want the idle container %s only (the busy one runs a command)", removed, err, idle)
	}
	// Once the command ends the old container goes by age.
	if _, err := call(t, shell.NewProcessTool(jobs), ws, map[string]any{"action": "kill", "sessionId": res.Details.(*shell.Details).SessionID}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the busy container pruned by age", func() bool {
		removed, err := d.Prune(ctx, 0, 7*24*time.Hour)
		return err == nil && slices.Equal(removed, []string{busy})
	})
	if eng.Live() != 0 {
		t.Errorf("live %d", eng.Live())
	}
	// A pruned scope gets a new container on its next command.
	if _, err := call(t, shell.New(shell.Config{}).WithRunner(runner{d, spec("idle")}), ws, map[string]any{"command": "echo hi; pwd"}); err != nil {
		t.Fatal(err)
	}
	if eng.Live() != 1 || len(eng.Created()) != 3 {
		t.Errorf("live %d created %d", eng.Live(), len(eng.Created()))
	}

	// Another process's container (as after a gateway restart): idle
	// since that process started at the earliest, so a container older
	// than idleHours the last gateway was using stays; maxAge still
	// counts from its creation.
	d2 := newDocker(t, eng)
	if removed, _ := d2.Prune(ctx, time.Hour, 0); len(removed) != 0 {
		t.Errorf("a container created now was pruned: %q", removed)
	}
	fresh, _, _, _ := eng.Container(eng.Names()[0])
	eng.Age(fresh, 2*time.Hour)
	if removed, _ := d2.Prune(ctx, time.Hour, 0); len(removed) != 0 {
		t.Errorf("prune right after a restart = %q, want nothing", removed)
	}
	if removed, _ := d2.Prune(ctx, time.Hour, 90*time.Minute); !slices.Equal(removed, []string{fresh}) {
		t.Errorf("prune = %q, want %s by its age", removed, fresh)
	}
}

func TestDockerPruner(t *testing.T) {
	eng, _ := scopeEngine(t)
	d := sandbox.NewDocker(eng.Host)
	ws := tempWorkspace(t)
	spec := sandbox.Spec{Backend: "docker", WorkspaceAccess: "none", ScopeKey: "main"}
	if _, err := call(t, shell.New(shell.Config{}).WithRunner(runner{d, spec}), ws, map[string]any{"command": "echo hi; pwd"}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var reported []string
	d.StartPruner(time.Nanosecond, 0, 10*time.Millisecond, func(removed []string, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			t.Errorf("prune: %v", err)
		}
		reported = append(reported, removed...)
	})
	waitFor(t, "the pruner removing the idle container", func() bool { return eng.Live() == 0 })
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(reported) != 1 {
		t.Errorf("reported %q", reported)
	}
	mu.Unlock()
	// Closed: no sweep any more (after a request cut short by Close
	// reached the engine).
	time.Sleep(50 * time.Millisecond)
	n := len(eng.Requests())
	time.Sleep(100 * time.Millisecond)
	if m := len(eng.Requests()); m != n {
		t.Errorf("%d requests after Close", m-n)
	}
}

func TestDockerScopeExplain(t *testing.T) {
	eng := dockertest.New(t)
	t.Setenv("DOCKER_HOST", eng.Host)
	spec := sandbox.Spec{Backend: "docker", WorkspaceAccess: "none", Scope: "session", ScopeKey: "agent:main:main", ScopeDir: "/srv/sbx/agent-main-main", Docker: sandbox.DockerSpec{
		SetupCommand: "apt-get install -y jq", GPUs: "all",
		Ulimits: map[string]sandbox.Ulimit{"nofile": {Soft: 1024, Hard: 2048}},
	}}
	out := spec.Explain("/ws")
	for _, want := range []string{
		"one long-lived container per session scope", `scope: session, key "agent:main:main"; container switchboard-sbx-agent-main-main-`,
		"setupCommand (once, sh -lc, after the container is created): apt-get install -y jq",
		"ulimit: nofile soft 1024 hard 2048", "gpus: all", "/workspace (the scope's private workspace /srv/sbx/agent-main-main)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
	if out := (sandbox.Spec{Backend: "docker"}).Explain("/ws"); !strings.Contains(out, "one container per command") {
		t.Errorf("explain without a scope key:\n%s", out)
	}
}

// A container whose configuration changed while it ran a command stays
// until the command ends, and goes with the scope's next command.
func TestDockerScopeConfigChangeWaitsForRunningCommand(t *testing.T) {
	eng, _ := scopeEngine(t)
	d := newDocker(t, eng)
	ws := tempWorkspace(t)
	spec := sandbox.Spec{Backend: "docker", ScopeKey: "main", Docker: sandbox.DockerSpec{Memory: "512m"}}
	old, err := d.Start(context.Background(), spec, sandbox.Run{Workspace: ws, Argv: []string{"/bin/sh", "-c", "sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	spec.Docker.Memory = "1g"
	run := func() {
		t.Helper()
		if _, err := call(t, shell.New(shell.Config{}).WithRunner(runner{d, spec}), ws, map[string]any{"command": "echo hi; pwd"}); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if eng.Live() != 2 || len(eng.Removed()) != 0 {
		t.Fatalf("live %d removed %q: the old container runs a command and must stay", eng.Live(), eng.Removed())
	}
	old.Kill()
	if _, sig, err := old.Wait(); sig != "SIGKILL" || err != nil {
		t.Errorf("wait = %q, %v", sig, err)
	}
	run()
	if eng.Live() != 1 || !slices.Equal(eng.Removed(), []string{old.ID()}) {
		t.Errorf("live %d removed %q, want the old container %s removed", eng.Live(), eng.Removed(), old.ID())
	}
}

// The daemon answers an exec's attach before its process runs: an early
// inspection must not read as the exit, and an early kill must not miss
// the process.
func TestDockerScopeSlowExecStart(t *testing.T) {
	eng, _ := scopeEngine(t)
	eng.ExecStartDelay = 400 * time.Millisecond
	d := newDocker(t, eng)
	ws := tempWorkspace(t)
	spec := sandbox.Spec{Backend: "docker", ScopeKey: "main"}
	res, err := call(t, shell.New(shell.Config{}).WithRunner(runner{d, spec}), ws, map[string]any{"command": "echo out; echo err >&2; exit 3"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "out\nerr\n\n\n(Command exited with code 3)"; res.Text != want {
		t.Errorf("text = %q, want %q", res.Text, want)
	}
	c, err := d.Start(context.Background(), spec, sandbox.Run{Workspace: ws, Argv: []string{"/bin/sh", "-c", "sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	c.Kill()
	done := make(chan string, 1)
	go func() {
		_, sig, _ := c.Wait()
		done <- sig
	}()
	select {
	case sig := <-done:
		if sig != "SIGKILL" {
			t.Errorf("signal %q", sig)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a command killed before it started kept running")
	}
}
