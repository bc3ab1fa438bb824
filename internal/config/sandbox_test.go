package config

import (
	"slices"
	"strings"
	"testing"
	"time"

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

// The reference's scope, workspaceRoot, prune and docker keys are read
// (and Switchboard's workspaceQuota),
// not warned about as unknown.
func TestSandboxScopeAndDockerKeys(t *testing.T) {
	src := `{ agents: {
  defaults: { sandbox: { scope: "session", workspaceRoot: "~/boxes", workspaceQuota: "64mb", prune: { idleHours: 2, maxAgeDays: 0 },
    docker: { setupCommand: "apt-get update", gpus: "all", memorySwap: -1, ulimits: { nofile: { soft: 1024, hard: 2048 }, nproc: 256, core: { hard: 0 } } } } },
  list: [{ id: "main" }, { id: "ops", sandbox: { scope: "agent", workspaceRoot: "/srv/ops-boxes", docker: { memorySwap: "2g", ulimits: { nproc: 64 } } } },
    { id: "rel", sandbox: { workspaceRoot: "rel-boxes", workspaceQuota: 1000000 } }] } }`
	c, warnings, err := Parse("test.json5", []byte(src), testEnv(map[string]string{"HOME": "/home/u"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %v", warnings)
	}
	if c.SandboxScope("main") != "session" || c.SandboxScope("ops") != "agent" {
		t.Errorf("scopes = %q, %q", c.SandboxScope("main"), c.SandboxScope("ops"))
	}
	if got := c.SandboxRoot("main"); got != "/home/u/boxes" {
		t.Errorf("main root = %q", got)
	}
	if got := c.SandboxRoot("ops"); got != "/srv/ops-boxes" {
		t.Errorf("ops root = %q", got)
	}
	if got := c.SandboxRoot("rel"); !strings.HasSuffix(got, "/rel-boxes") || !strings.HasPrefix(got, "/") {
		t.Errorf("relative root = %q, want under the state dir", got)
	}
	if m, r := c.SandboxWorkspaceQuota("main"), c.SandboxWorkspaceQuota("rel"); m != 64<<20 || r != 1000000 {
		t.Errorf("workspace quotas = %d, %d", m, r)
	}
	if q := mustParse(t, `{}`, nil).SandboxWorkspaceQuota("main"); q != 0 {
		t.Errorf("unset workspace quota = %d, want 0 (the sandbox's default)", q)
	}
	if _, _, err := Parse("bad.json5", []byte(`{ agents: { defaults: { sandbox: { workspaceQuota: "lots" } } } }`), testEnv(nil)); err == nil ||
		!strings.Contains(err.Error(), "workspaceQuota") {
		t.Errorf("bad workspace quota: %v", err)
	}
	if idle, age := c.SandboxPrune(); idle != 2*time.Hour || age != 0 {
		t.Errorf("prune = %v, %v", idle, age)
	}
	main := c.SandboxDocker("main")
	if main.SetupCommand != "apt-get update" || main.GPUs != "all" || *main.MemorySwap != -1 {
		t.Errorf("main docker = %+v", main)
	}
	want := map[string]Ulimit{"nofile": {1024, 2048}, "nproc": {256, 256}, "core": {0, 0}}
	if diff := cmp.Diff(want, main.Ulimits); diff != "" {
		t.Errorf("main ulimits (-want +got):\n%s", diff)
	}
	ops := c.SandboxDocker("ops")
	if *ops.MemorySwap != 2<<30 || ops.Ulimits["nproc"] != (Ulimit{64, 64}) || ops.Ulimits["nofile"] != (Ulimit{1024, 2048}) {
		t.Errorf("ops docker = %+v", ops)
	}
	if c.Agents.Defaults.Sandbox.Docker.Ulimits["nproc"] != (Ulimit{256, 256}) {
		t.Error("the merge changed the defaults' ulimits")
	}
}

// Under scope "shared" every session shares the defaults' one container,
// so an agent's own docker settings are ignored, as the reference does.
func TestSandboxSharedScopeIgnoresAgentDocker(t *testing.T) {
	c := mustParse(t, `{ agents: { defaults: { sandbox: { scope: "shared", docker: { image: "a:1" } } },
  list: [{ id: "main", sandbox: { docker: { image: "b:2" } } }] } }`, nil)
	if got := c.SandboxDocker("main").Image; got != "a:1" {
		t.Errorf("image = %q", got)
	}
	if idle, age := c.SandboxPrune(); idle != 24*time.Hour || age != 7*24*time.Hour {
		t.Errorf("default prune = %v, %v", idle, age)
	}
}

func TestSandboxScopeValidate(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`{ agents: { defaults: { sandbox: { scope: "global" } } } }`, "agents.defaults.sandbox.scope"},
		{`{ agents: { list: [{ id: "x", sandbox: { scope: "host" } }] } }`, "agents.list[0].sandbox.scope"},
		{`{ agents: { defaults: { sandbox: { prune: { idleHours: -1 } } } } }`, "agents.defaults.sandbox.prune.idleHours"},
		{`{ agents: { defaults: { sandbox: { docker: { ulimits: { files: 10 } } } } } }`, `unknown ulimit "files"`},
		{`{ agents: { defaults: { sandbox: { docker: { ulimits: { nofile: { soft: 10, hard: 5 } } } } } } }`, "soft limit 10 is above the hard limit 5"},
		{`{ agents: { defaults: { sandbox: { docker: { ulimits: { nofile: "many" } } } } } }`, "agents.defaults.sandbox.docker.ulimits.nofile"},
		{`{ agents: { defaults: { sandbox: { docker: { ulimits: { nofile: {} } } } } } }`, "a number or {soft, hard}"},
		{`{ agents: { defaults: { sandbox: { docker: { memorySwap: -2 } } } } }`, "agents.defaults.sandbox.docker.memorySwap"},
	} {
		_, _, err := Parse("test.json5", []byte(tc.src), testEnv(nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.src, err, tc.want)
		}
	}
}

// tools.sandbox.tools and tools.elevated, global and per agent.
func TestSandboxToolPolicyAndElevated(t *testing.T) {
	c, warnings, err := Parse("test.json5", []byte(`{ tools: { sandbox: { tools: { alsoAllow: ["web_fetch"], deny: ["gateway"] } },
    elevated: { allowFrom: { webchat: ["*"], telegram: ["123"] } } },
  agents: { list: [{ id: "main" }, { id: "ops", tools: { sandbox: { tools: { allow: [] } }, elevated: { enabled: false, allowFrom: { telegram: ["9"] } } } }] } }`), testEnv(nil))
	if err != nil || len(warnings) != 0 {
		t.Fatalf("err %v warnings %v", err, warnings)
	}
	if p := c.SandboxToolPolicy("main"); p.Allow != nil || !slices.Equal(p.AlsoAllow, []string{"web_fetch"}) || !slices.Equal(p.Deny, []string{"gateway"}) {
		t.Errorf("main policy = %+v", p)
	}
	if p := c.SandboxToolPolicy("ops"); p.Allow == nil || len(p.Allow) != 0 || !slices.Equal(p.Deny, []string{"gateway"}) {
		t.Errorf("ops policy = %+v (an empty allow list is set, not unset)", p)
	}
	if on, g, a := c.Elevated("main"); !on || g["telegram"][0] != "123" || a != nil {
		t.Errorf("main elevated = %v %v %v", on, g, a)
	}
	if on, _, a := c.Elevated("ops"); on || a["telegram"][0] != "9" {
		t.Errorf("ops elevated = %v %v", on, a)
	}
}
