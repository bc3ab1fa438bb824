package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSandboxDockerMerge(t *testing.T) {
	c := mustParse(t, `{ agents: {
  defaults: { sandbox: { backend: "docker", docker: { image: "a:1", memory: "1g", pidsLimit: 128, env: { A: "1", B: "2" }, binds: ["/srv/a:/a:ro"] } } },
  list: [{ id: "main" }, { id: "box", sandbox: { backend: "bwrap", docker: { image: "b:2", memory: 536870912, cpus: 1.5, env: { B: "3" }, binds: ["/srv/b:/b"] } } }] } }`, nil)
	if got := c.SandboxBackend("main"); got != "docker" {
		t.Errorf("main backend = %q", got)
	}
	if got := c.SandboxBackend("box"); got != "bubblewrap" {
		t.Errorf("box backend = %q", got)
	}
	main := c.SandboxDocker("main")
	if main.Image != "a:1" || *main.Memory != 1<<30 || *main.PidsLimit != 128 || main.Cpus != nil {
		t.Errorf("main docker = %+v", main)
	}
	box := c.SandboxDocker("box")
	if box.Image != "b:2" || *box.Memory != 512<<20 || *box.PidsLimit != 128 || *box.Cpus != 1.5 {
		t.Errorf("box docker = %+v", box)
	}
	if diff := cmp.Diff(map[string]string{"A": "1", "B": "3"}, box.Env); diff != "" {
		t.Errorf("box env (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/srv/a:/a:ro", "/srv/b:/b"}, box.Binds); diff != "" {
		t.Errorf("box binds (-want +got):\n%s", diff)
	}
	// Merging did not change the defaults.
	if main := c.SandboxDocker("main"); len(main.Binds) != 1 || main.Env["B"] != "2" {
		t.Errorf("defaults changed by the merge: %+v", main)
	}
}

func TestSandboxDockerValidate(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`{ agents: { defaults: { sandbox: { backend: "podman" } } } }`, "agents.defaults.sandbox.backend"},
		{`{ agents: { defaults: { sandbox: { docker: { network: "host" } } } } }`, `network "host" is blocked`},
		{`{ agents: { list: [{ id: "x", sandbox: { docker: { network: "container:db" } } }] } }`, "agents.list[0].sandbox.docker.network"},
		{`{ agents: { defaults: { sandbox: { docker: { binds: ["data:/data"] } } } } }`, "agents.defaults.sandbox.docker.binds[0]"},
		{`{ agents: { defaults: { sandbox: { docker: { memory: "lots" } } } } }`, "agents.defaults.sandbox.docker.memory"},
	} {
		_, _, err := Parse("test.json5", []byte(tc.src), testEnv(nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.src, err, tc.want)
		}
	}
}
