package sandbox

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	units "github.com/docker/go-units"
)

// Backends (agents.defaults.sandbox.backend).
const (
	BackendBubblewrap = "bubblewrap"
	BackendDocker     = "docker"
)

// Defaults of DockerSpec, as the reference's agents.defaults.sandbox.docker.
const (
	DefaultDockerImage     = "openclaw-sandbox:bookworm-slim"
	DefaultContainerPrefix = "switchboard-sbx-"
	DefaultDockerWorkdir   = "/workspace"
	DefaultDockerNetwork   = "none"
	// dockerAgentDir is where a read-only workspace is mounted (the
	// reference's /agent).
	dockerAgentDir = "/agent"
)

// DefaultDockerTmpfs are the writable tmpfs mounts of a container with a
// read-only root.
var DefaultDockerTmpfs = []string{"/tmp", "/var/tmp", "/run"}

// DockerSpec is the Docker backend's part of a Spec: the reference's
// agents.defaults.sandbox.docker keys merged with the agent's. Zero fields
// take the defaults.
type DockerSpec struct {
	Image           string
	ContainerPrefix string
	// Workdir is where a read-write workspace is mounted and where
	// commands start ("" means /workspace).
	Workdir string
	// ReadOnlyRoot makes the image's file system read-only (nil means
	// true).
	ReadOnlyRoot *bool
	// Tmpfs lists writable tmpfs mounts, "path" or "path:options" (nil
	// means DefaultDockerTmpfs).
	Tmpfs []string
	// Network is the container's network mode ("" means none); "host"
	// and "container:<id>" are refused.
	Network string
	// User is "uid", "uid:gid" or a name in the image ("" means the
	// image's user).
	User string
	// CapDrop lists capabilities dropped (nil means ALL).
	CapDrop []string
	// Env is added to each command's environment.
	Env map[string]string
	// PidsLimit bounds the processes (0 means DefaultProcs, -1 none).
	PidsLimit int64
	// Memory and MemorySwap are sizes such as "1g" ("" means
	// DefaultMemoryBytes and no separate swap limit).
	Memory, MemorySwap string
	// CPUs bounds CPU time in cores (0 means no bound).
	CPUs float64
	// Binds are extra "host:container[:ro|rw]" mounts.
	Binds      []string
	DNS        []string
	ExtraHosts []string
	// SeccompProfile is a JSON profile file; ApparmorProfile a loaded
	// profile's name.
	SeccompProfile, ApparmorProfile string
	// SetupCommand runs once, with sh -lc, after the scope's container is
	// created.
	SetupCommand string
	// GPUs is Docker's --gpus value ("all", "2", "device=GPU-uuid"; ""
	// means none).
	GPUs string
	// Ulimits are the container's rlimits by name ("nofile", "nproc",
	// …).
	Ulimits map[string]Ulimit
}

// Ulimit is one docker.ulimits entry.
type Ulimit struct{ Soft, Hard int64 }

// normalized returns d with its defaults filled in.
func (d DockerSpec) normalized() DockerSpec {
	d.Image = cmp.Or(strings.TrimSpace(d.Image), DefaultDockerImage)
	d.ContainerPrefix = cmp.Or(d.ContainerPrefix, DefaultContainerPrefix)
	d.Workdir = cmp.Or(d.Workdir, DefaultDockerWorkdir)
	if d.ReadOnlyRoot == nil {
		t := true
		d.ReadOnlyRoot = &t
	}
	if d.Tmpfs == nil {
		d.Tmpfs = DefaultDockerTmpfs
	}
	d.Network = cmp.Or(strings.TrimSpace(d.Network), DefaultDockerNetwork)
	if d.CapDrop == nil {
		d.CapDrop = []string{"ALL"}
	}
	if d.PidsLimit == 0 {
		d.PidsLimit = DefaultProcs
	}
	return d
}

// blockedBindSources may not be mounted into a container: system and
// credential directories, and where the Docker socket lives.
var blockedBindSources = []string{"/", "/etc", "/proc", "/sys", "/dev", "/root", "/boot", "/run", "/var/run"}

// validate reports every problem of d, as one error.
func (d DockerSpec) validate() error {
	n := d.normalized()
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("sandbox: docker."+format, args...)) }
	switch {
	case n.Network == "host":
		bad("network \"host\" is blocked: it would share the gateway's network namespace; use \"none\" or \"bridge\"")
	case strings.HasPrefix(n.Network, "container:"):
		bad("network %q is blocked: joining another container's namespaces is not supported", n.Network)
	}
	if !path.IsAbs(n.Workdir) {
		bad("workdir %q must be an absolute path", n.Workdir)
	}
	for _, t := range n.Tmpfs {
		if p, _, _ := strings.Cut(t, ":"); !path.IsAbs(p) {
			bad("tmpfs %q must be an absolute path", t)
		}
	}
	for _, b := range d.Binds {
		if err := checkBind(b); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range d.DNS {
		if _, err := netip.ParseAddr(s); err != nil {
			bad("dns %q is not an IP address", s)
		}
	}
	for _, h := range d.ExtraHosts {
		if name, _, ok := strings.Cut(h, ":"); !ok || name == "" {
			bad("extraHosts %q: want \"name:address\"", h)
		}
	}
	if _, _, err := d.memory(); err != nil {
		errs = append(errs, err)
	}
	if d.CPUs < 0 {
		bad("cpus %g must not be negative", d.CPUs)
	}
	for k := range d.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			bad("env key %q is not a valid variable name", k)
		}
	}
	if err := d.checkUlimits(); err != nil {
		errs = append(errs, err)
	}
	if d.GPUs != "" {
		if _, err := parseGPUs(d.GPUs); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// memory returns the memory and swap limits in bytes.
func (d DockerSpec) memory() (mem, swap int64, err error) {
	mem = DefaultMemoryBytes
	if s := strings.TrimSpace(d.Memory); s != "" {
		if mem, err = units.RAMInBytes(s); err != nil || mem <= 0 {
			return 0, 0, fmt.Errorf("sandbox: docker.memory %q: want a size such as \"1g\"", d.Memory)
		}
	}
	if s := strings.TrimSpace(d.MemorySwap); s != "" {
		if s == "-1" {
			return mem, -1, nil
		}
		if swap, err = units.RAMInBytes(s); err != nil || swap < mem {
			return 0, 0, fmt.Errorf("sandbox: docker.memorySwap %q: want a size not below docker.memory, or \"-1\"", d.MemorySwap)
		}
	}
	return mem, swap, nil
}

// checkBind validates one docker.binds entry, "host:container[:mode]".
func checkBind(b string) error {
	parts := strings.Split(b, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return fmt.Errorf("sandbox: docker.binds %q: want \"/host/path:/container/path[:ro|rw]\"", b)
	}
	src, dst := parts[0], parts[1]
	if !filepath.IsAbs(src) || !path.IsAbs(dst) {
		return fmt.Errorf("sandbox: docker.binds %q: both paths must be absolute", b)
	}
	if len(parts) == 3 {
		for _, o := range strings.Split(parts[2], ",") {
			switch o {
			case "ro", "rw", "z", "Z", "rprivate", "private", "rslave", "slave", "nocopy":
			default:
				return fmt.Errorf("sandbox: docker.binds %q: unknown mode %q (want ro or rw)", b, o)
			}
		}
	}
	check := func(p string) error {
		p = filepath.Clean(p)
		if strings.Contains(p, "docker.sock") {
			return fmt.Errorf("sandbox: docker.binds %q: mounting the Docker socket is blocked", b)
		}
		for _, blocked := range blockedBindSources {
			if p == blocked || (blocked != "/" && strings.HasPrefix(p, blocked+"/")) {
				return fmt.Errorf("sandbox: docker.binds %q: %s is a blocked source (system, credential or Docker socket directory)", b, p)
			}
		}
		home, _ := os.UserHomeDir()
		for _, c := range []string{".aws", ".config", ".docker", ".gnupg", ".netrc", ".ssh", ".kube"} {
			if home != "" && (p == filepath.Join(home, c) || strings.HasPrefix(p, filepath.Join(home, c)+"/")) {
				return fmt.Errorf("sandbox: docker.binds %q: %s holds credentials and is blocked", b, p)
			}
		}
		return nil
	}
	if err := check(src); err != nil {
		return err
	}
	// A symlink must not lead a harmless-looking path into a blocked one.
	if real, err := filepath.EvalSymlinks(src); err == nil {
		return check(real)
	}
	return nil
}

// containerDir maps the host directory dir (the workspace or below it)
// into the container's view, per workspace access.
func (s Spec) containerDir(workspace, dir string) (string, error) {
	d := s.Docker.normalized()
	if s.WorkspaceAccess == AccessNone {
		return d.Workdir, nil
	}
	rel, err := filepath.Rel(filepath.Clean(workspace), filepath.Clean(cmp.Or(dir, workspace)))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("sandbox: workdir %s is outside the workspace %s", dir, workspace)
	}
	base := d.Workdir
	if s.WorkspaceAccess == AccessRO {
		base = dockerAgentDir
	}
	return path.Join(base, filepath.ToSlash(rel)), nil
}

// Run is one command for the Docker backend (shell.Command's fields).
type Run struct {
	Workspace string
	Dir       string
	Argv      []string
	Env       []string
	Output    io.Writer
	Stdin     bool
}

// containerConfig returns the container that runs r confined by s: the
// workspace mounted per workspaceAccess (rw at docker.workdir, ro at
// /agent with a private docker.workdir, none only the private one), the
// network, user, capabilities, limits and extra binds of s.Docker.
func (s Spec) containerConfig(r Run) (*containerConfig, *hostConfig, error) {
	if err := s.Validate(); err != nil {
		return nil, nil, err
	}
	if len(r.Argv) == 0 {
		return nil, nil, errors.New("sandbox: empty command")
	}
	s = s.Normalized()
	d := s.Docker.normalized()
	ws, err := s.hostWorkspace(r.Workspace)
	if err != nil {
		return nil, nil, err
	}
	dir, err := s.containerDir(ws, r.Dir)
	if err != nil {
		return nil, nil, err
	}
	cfg := &containerConfig{
		Image:        d.Image,
		Cmd:          slices.Clone(r.Argv),
		Entrypoint:   []string{},
		Env:          append(d.baseEnv(), r.Env...),
		WorkingDir:   dir,
		User:         d.User,
		AttachStdout: true,
		AttachStderr: true,
		AttachStdin:  r.Stdin,
		OpenStdin:    r.Stdin,
		StdinOnce:    r.Stdin,
		Labels:       map[string]string{labelSandbox: "exec"},
	}
	hc, err := s.hostConfig(ws)
	if err != nil {
		return nil, nil, err
	}
	return cfg, hc, nil
}

// hostWorkspace returns the cleaned host workspace, "" under access none
// (s normalized).
func (s Spec) hostWorkspace(workspace string) (string, error) {
	if s.WorkspaceAccess == AccessNone {
		return "", nil
	}
	if workspace == "" || !filepath.IsAbs(workspace) {
		return "", fmt.Errorf("sandbox: workspace %q must be an absolute path", workspace)
	}
	return filepath.Clean(workspace), nil
}

// baseEnv is the environment every container starts with: LANG and
// docker.env, sorted by name.
func (d DockerSpec) baseEnv() []string {
	env := []string{"LANG=C.UTF-8"}
	for _, k := range slices.Sorted(maps.Keys(d.Env)) {
		env = append(env, k+"="+d.Env[k])
	}
	return env
}

// hostConfig returns the confinement of a container of s (normalized)
// whose host workspace is ws: network, root, capabilities, limits, binds
// and the workspace mounts per workspaceAccess. With access none or ro
// and a ScopeDir, that directory is docker.workdir (read-write) instead
// of a tmpfs.
func (s Spec) hostConfig(ws string) (*hostConfig, error) {
	d := s.Docker.normalized()
	mem, swap, _ := d.memory()
	pids := d.PidsLimit
	init := true
	hc := &hostConfig{
		NetworkMode:    d.Network,
		ReadonlyRootfs: *d.ReadOnlyRoot,
		CapDrop:        slices.Clone(d.CapDrop),
		SecurityOpt:    []string{"no-new-privileges"},
		Init:           &init,
		Tmpfs:          map[string]string{},
		Binds:          slices.Clone(d.Binds),
		ExtraHosts:     slices.Clone(d.ExtraHosts),
		Memory:         mem,
		MemorySwap:     swap,
		NanoCPUs:       int64(d.CPUs * 1e9),
		PidsLimit:      &pids,
		Ulimits:        d.ulimits(),
	}
	if d.GPUs != "" {
		req, err := parseGPUs(d.GPUs)
		if err != nil {
			return nil, err
		}
		hc.DeviceRequests = []deviceRequest{req}
	}
	if d.SeccompProfile != "" {
		b, err := os.ReadFile(d.SeccompProfile)
		if err != nil {
			return nil, fmt.Errorf("sandbox: docker.seccompProfile: %w", err)
		}
		hc.SecurityOpt = append(hc.SecurityOpt, "seccomp="+string(b))
	}
	if d.ApparmorProfile != "" {
		hc.SecurityOpt = append(hc.SecurityOpt, "apparmor="+d.ApparmorProfile)
	}
	for _, a := range d.DNS {
		hc.DNS = append(hc.DNS, netip.MustParseAddr(a).String())
	}
	for _, t := range d.Tmpfs {
		p, opts, _ := strings.Cut(t, ":")
		hc.Tmpfs[p] = opts
	}
	if s.WorkspaceAccess == AccessRW {
		hc.Mounts = append(hc.Mounts, mountSpec{Type: mountBind, Source: ws, Target: d.Workdir})
		return hc, nil
	}
	if s.WorkspaceAccess == AccessRO {
		hc.Mounts = append(hc.Mounts, mountSpec{Type: mountBind, Source: ws, Target: dockerAgentDir, ReadOnly: true})
	}
	if s.ScopeDir != "" {
		hc.Mounts = append(hc.Mounts, mountSpec{Type: mountBind, Source: filepath.Clean(s.ScopeDir), Target: d.Workdir})
	} else {
		hc.Tmpfs[d.Workdir] = ""
	}
	return hc, nil
}

// prepareScopeDir creates the scope's private workspace (0700) when s
// mounts one.
func (s Spec) prepareScopeDir() error {
	n := s.Normalized()
	if n.ScopeDir == "" || n.WorkspaceAccess == AccessRW {
		return nil
	}
	if err := os.MkdirAll(n.ScopeDir, 0o700); err != nil {
		return fmt.Errorf("sandbox: scope workspace: %w", err)
	}
	return nil
}

// Docker runs sandboxed commands in containers of a Docker Engine,
// through its API (DOCKER_HOST, else the local socket). A Spec with a
// ScopeKey runs its commands with docker exec in the scope's long-lived
// container (see Start); without one each command gets a fresh container
// that is removed when it ends. A daemon that cannot be reached fails the
// command closed: nothing runs on the host. Safe for concurrent use.
type Docker struct {
	host string
	// born is when this backend was made: a container it has not used
	// yet counts as idle from then at the earliest, so that a gateway
	// restart does not prune the containers it was using.
	born time.Time

	mu     sync.Mutex
	eng    *engine
	pruner *pruner

	smu    sync.Mutex
	scopes map[string]*scopeState   // by scope key
	uses   map[string]*containerUse // by container id
}

// NewDocker returns a backend talking to the daemon at host ("" means
// DOCKER_HOST, else the platform's default socket). It connects lazily.
func NewDocker(host string) *Docker { return &Docker{host: host, born: time.Now()} }

// client returns the API client, making it on first use.
func (d *Docker) client() (*engine, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.eng != nil {
		return d.eng, nil
	}
	eng, err := newEngine(d.host)
	if err != nil {
		return nil, fmt.Errorf("sandbox unavailable: Docker client: %w; check DOCKER_HOST", err)
	}
	d.eng = eng
	return eng, nil
}

// Host names the daemon the backend talks to.
func (d *Docker) Host() string {
	if d.host != "" {
		return d.host
	}
	return cmp.Or(os.Getenv("DOCKER_HOST"), defaultDockerHost)
}

// Close stops the pruner (see StartPruner) and releases the client's
// connections. Scope containers stay for the next start to reuse.
func (d *Docker) Close() error {
	d.stopPruner()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.eng == nil {
		return nil
	}
	d.eng.close()
	d.eng = nil
	return nil
}

// Check reports whether the daemon answers, naming it and the fix when
// it does not.
func (d *Docker) Check(ctx context.Context) error {
	cli, err := d.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := cli.ping(ctx); err != nil {
		return fmt.Errorf("sandbox unavailable: Docker daemon unreachable at %s (%v); start Docker or point DOCKER_HOST at a running daemon, "+
			"or set agents.defaults.sandbox.backend to \"bubblewrap\" or sandbox.mode to \"off\"", d.Host(), err)
	}
	return nil
}

// ensureImage pulls image unless the daemon has it.
func (d *Docker) ensureImage(ctx context.Context, cli *engine, image string) error {
	err := cli.imageInspect(ctx, image)
	if err == nil {
		return nil
	}
	if !isNotFound(err) {
		return fmt.Errorf("sandbox unavailable: Docker image %s: %w", image, err)
	}
	if err := cli.imagePull(ctx, image); err != nil {
		return fmt.Errorf("sandbox unavailable: Docker image %s is not present and could not be pulled (%v); "+
			"build or pull it on the Docker host, or set agents.defaults.sandbox.docker.image", image, err)
	}
	return nil
}

// Start runs r confined by s and returns once it runs. ctx bounds the
// start only: the command runs until it exits or is killed.
//
// With s.ScopeKey set the command runs with docker exec in the scope's
// long-lived container, made on first use (and set up with
// docker.setupCommand), found again by its labels after a restart, and
// replaced when its configuration changed; concurrent starts of a scope
// share it. Without a ScopeKey it runs in a new container removed when
// it ends.
func (d *Docker) Start(ctx context.Context, s Spec, r Run) (*Container, error) {
	if s.ScopeKey != "" {
		return d.startScoped(ctx, s, r)
	}
	cfg, hc, err := s.containerConfig(r)
	if err != nil {
		return nil, err
	}
	if err := d.Check(ctx); err != nil {
		return nil, err
	}
	cli, err := d.client()
	if err != nil {
		return nil, err
	}
	if err := s.prepareScopeDir(); err != nil {
		return nil, err
	}
	if err := d.ensureImage(ctx, cli, cfg.Image); err != nil {
		return nil, err
	}
	prefix := s.Docker.normalized().ContainerPrefix
	id, err := cli.containerCreate(ctx, prefix+randomID(), cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("sandbox: create container: %w", err)
	}
	c := &Container{cli: cli, id: id, copied: make(chan struct{})}
	att, err := cli.containerAttach(ctx, c.id, r.Stdin)
	if err != nil {
		c.remove()
		return nil, fmt.Errorf("sandbox: attach container: %w", err)
	}
	c.attach = att
	if err := cli.containerStart(ctx, c.id); err != nil {
		c.attach.Close()
		c.remove()
		return nil, fmt.Errorf("sandbox: start container: %w", err)
	}
	c.waited = cli.containerWait(context.Background(), c.id)
	if r.Stdin {
		c.stdin = &containerStdin{c: c}
	}
	out := r.Output
	if out == nil {
		out = io.Discard
	}
	go func() {
		defer close(c.copied)
		_ = demux(out, out, c.attach)
	}()
	return c, nil
}

func randomID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Container is one running command of the Docker backend: a container of
// its own, or an exec in a scope's container. Its methods match
// shell.Process.
type Container struct {
	cli    *engine
	id     string
	attach *hijacked
	stdin  io.WriteCloser
	copied chan struct{} // closed when the output stream ended
	killed atomic.Bool

	// A command in a container of its own.
	waited  <-chan waitResult
	removed sync.Once

	// A command exec'd in a scope's container (nil otherwise).
	exec *execCommand
}

// ID is the id of the container the command runs in.
func (c *Container) ID() string { return c.id }

// PID is 0: the command has no process id on the gateway host.
func (c *Container) PID() int { return 0 }

// Stdin is the command's input, nil unless Run.Stdin was set.
func (c *Container) Stdin() io.WriteCloser {
	if c.stdin == nil {
		return nil
	}
	return c.stdin
}

// outputGrace bounds the wait for the output stream after the exit.
const outputGrace = 2 * time.Second

// Wait waits for the command to end and its output to arrive, and
// returns the exit code (or "SIGKILL" when Kill ended it). A container of
// its own is removed; a scope's container stays.
func (c *Container) Wait() (int, string, error) {
	if c.exec != nil {
		return c.waitExec()
	}
	defer c.remove()
	var code int64
	res := <-c.waited
	if res.err != nil {
		c.Kill()
		c.attach.Close()
		return -1, "", fmt.Errorf("container %s: %w", shortID(c.id), res.err)
	}
	code = res.code
	t := time.NewTimer(outputGrace)
	defer t.Stop()
	select {
	case <-c.copied:
	case <-t.C:
	}
	c.attach.Close()
	if c.killed.Load() && code == 128+9 {
		return -1, "SIGKILL", nil
	}
	return int(code), "", nil
}

// Kill ends every process of the command: its container, or in a scope's
// container every process with the command's ExecMarkerVar value, also
// those that left its session.
func (c *Container) Kill() {
	c.killed.Store(true)
	if c.exec != nil {
		c.killExec()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = c.cli.containerKill(ctx, c.id, "KILL")
}

// remove deletes the container (forcefully, so that one still running
// goes too).
func (c *Container) remove() {
	c.removed.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = c.cli.containerRemove(ctx, c.id)
	})
}

func shortID(id string) string { return id[:min(len(id), 12)] }

// containerStdin writes to the attached input; Close ends it.
type containerStdin struct{ c *Container }

func (w *containerStdin) Write(p []byte) (int, error) { return w.c.attach.Write(p) }
func (w *containerStdin) Close() error                { return w.c.attach.CloseWrite() }

// explainDocker describes the Docker sandbox, for Explain.
func (s Spec) explainDocker(b *strings.Builder, workspace string) {
	d := s.Docker.normalized()
	dk := NewDocker("")
	if s.ScopeKey == "" {
		fmt.Fprintf(b, "backend: docker (Engine API at %s; one container per command, removed when it ends)\n", dk.Host())
	} else {
		fmt.Fprintf(b, "backend: docker (Engine API at %s; one long-lived container per %s scope, commands run with docker exec)\n", dk.Host(), s.Scope)
	}
	s.explainScope(b, workspace)
	fmt.Fprintf(b, "image: %s\n", d.Image)
	private := "a private tmpfs"
	if s.ScopeDir != "" {
		private = "the scope's private workspace " + s.ScopeDir
	}
	switch s.WorkspaceAccess {
	case AccessNone:
		fmt.Fprintf(b, "workspace: not mounted (workspaceAccess none); commands start in %s (%s)\n", d.Workdir, private)
	case AccessRO:
		fmt.Fprintf(b, "workspace: %s read-only at %s; commands start there; %s is %s\n", workspace, dockerAgentDir, d.Workdir, private)
	default:
		fmt.Fprintf(b, "workspace: %s read-write at %s\n", workspace, d.Workdir)
	}
	if q := s.explainQuota(); q != "" {
		fmt.Fprintf(b, "disk: %s\n", q)
	}
	for _, bind := range d.Binds {
		fmt.Fprintf(b, "bind: %s\n", bind)
	}
	fmt.Fprintf(b, "root file system: %s\n", map[bool]string{true: "read-only", false: "writable"}[*d.ReadOnlyRoot])
	fmt.Fprintf(b, "tmpfs: %s\n", strings.Join(d.Tmpfs, " "))
	fmt.Fprintf(b, "network: %s\n", d.Network)
	if len(d.DNS) > 0 || len(d.ExtraHosts) > 0 {
		fmt.Fprintf(b, "dns: %s; extra hosts: %s\n", strings.Join(d.DNS, " "), strings.Join(d.ExtraHosts, " "))
	}
	fmt.Fprintf(b, "user: %s\n", cmp.Or(d.User, "(the image's)"))
	fmt.Fprintf(b, "capabilities dropped: %s; no-new-privileges; init process\n", strings.Join(d.CapDrop, " "))
	if d.SeccompProfile != "" || d.ApparmorProfile != "" {
		fmt.Fprintf(b, "seccomp profile: %s; apparmor profile: %s\n", cmp.Or(d.SeccompProfile, "(Docker's default)"), cmp.Or(d.ApparmorProfile, "(Docker's default)"))
	}
	mem, swap, err := d.memory()
	if err != nil {
		fmt.Fprintf(b, "limits: %v\n", err)
	} else {
		cpus := "unlimited"
		if d.CPUs > 0 {
			cpus = strconv.FormatFloat(d.CPUs, 'g', -1, 64)
		}
		sw := "default"
		if swap != 0 {
			sw = strconv.FormatInt(swap, 10)
		}
		fmt.Fprintf(b, "limits: memory %d bytes, memory+swap %s, cpus %s, pids %d\n", mem, sw, cpus, d.PidsLimit)
	}
	for _, u := range d.ulimits() {
		fmt.Fprintf(b, "ulimit: %s soft %d hard %d\n", u.Name, u.Soft, u.Hard)
	}
	if d.GPUs != "" {
		fmt.Fprintf(b, "gpus: %s\n", d.GPUs)
	}
	if len(d.Env) > 0 {
		fmt.Fprintf(b, "env: %s (values not shown)\n", strings.Join(slices.Sorted(maps.Keys(d.Env)), " "))
	}
	if err := s.Validate(); err != nil {
		fmt.Fprintf(b, "status: %v\n", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := dk.Check(ctx); err != nil {
		fmt.Fprintf(b, "status: %v\n", err)
	} else {
		fmt.Fprintf(b, "status: available\n")
	}
	_ = dk.Close()
}

// explainScope describes the scope, its container and its setupCommand,
// for Explain (s normalized).
func (s Spec) explainScope(b *strings.Builder, workspace string) {
	d := s.Docker.normalized()
	if s.ScopeKey == "" {
		fmt.Fprintf(b, "scope: %s (no scope key given: each command gets its own container)\n", s.Scope)
	} else if t, err := s.scopeTarget(workspace); err == nil {
		fmt.Fprintf(b, "scope: %s, key %q; container %s (config %s)\n", s.Scope, s.ScopeKey, t.name, t.hash)
	} else {
		fmt.Fprintf(b, "scope: %s, key %q\n", s.Scope, s.ScopeKey)
	}
	if d.SetupCommand != "" {
		fmt.Fprintf(b, "setupCommand (once, sh -lc, after the container is created): %s\n", d.SetupCommand)
	}
}
