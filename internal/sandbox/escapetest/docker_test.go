package escapetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

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
	if c.Config.Image != "team/sbx:1" || !slices.Equal(c.Config.Cmd, []string{"/bin/sh", "-c", "echo hi; pwd"}) {
		t.Errorf("config %+v", c.Config)
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
	if len(eng.Killed()) != 1 {
		t.Errorf("killed %q, want the sleeping container", eng.Killed())
	}
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
