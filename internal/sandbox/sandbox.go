// Package sandbox confines the commands of sandboxed sessions, with
// bubblewrap (the default) or, when sandbox.backend is "docker", in
// containers of a Docker Engine through its Go SDK (see Docker).
//
// The bubblewrap backend (bwrap) gives each command user, mount, PID, IPC,
// UTS and network namespaces, a seccomp filter denying namespace, mount,
// ptrace and keyring syscalls, system directories read-only, a private
// /tmp, the workspace bound per workspaceAccess, and rlimits set by
// prlimit inside the sandbox. What rlimits cannot bound is bounded too
// (see bounds.go): the process count by a pids cgroup per command (a root
// gateway's processes are exempt from RLIMIT_NPROC; without a writable
// pids cgroup a root gateway's sandbox refuses to start), the private
// tmpfs mounts by their size, and the scope's private workspace by a
// quota checked before each command and kept while it runs (see Guard).
//
// When a backend is unavailable (bwrap missing, user namespaces disabled,
// the Docker daemon unreachable) the sandbox fails closed: Check, Command
// and Docker.Start return an error naming the missing piece and the fix,
// and nothing runs. It imports no other Switchboard package; the daemon,
// the CLI and tests use it.
package sandbox

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Workspace access levels (agents.defaults.sandbox.workspaceAccess).
const (
	AccessNone = "none"
	AccessRO   = "ro"
	AccessRW   = "rw"
)

// Network modes (agents.defaults.sandbox.network).
const (
	NetworkNone = "none"
	NetworkHost = "host"
)

// Default limits applied inside the sandbox.
const (
	DefaultCPUSeconds  = 600
	DefaultMemoryBytes = 2 << 30
	DefaultProcs       = 256
	DefaultFileBytes   = 1 << 30
)

// sandboxUID is the unprivileged identity commands run as inside.
const sandboxUID = "65534"

// Limits are the limits of a sandboxed command; zero fields take the
// defaults.
type Limits struct {
	CPUSeconds  int64 // RLIMIT_CPU
	MemoryBytes int64 // RLIMIT_AS
	// Procs bounds the command's processes (threads included): the pids
	// cgroup's pids.max where one is writable, RLIMIT_NPROC as well.
	Procs     int64
	FileBytes int64 // RLIMIT_FSIZE
	// TmpBytes sizes each private tmpfs (/tmp, /var/tmp, /run).
	TmpBytes int64
	// WorkspaceBytes is the quota of the scope's private workspace
	// (ScopeDir): no command starts while it holds more, and one that
	// writes past it is stopped (see Guard).
	WorkspaceBytes int64
}

// Spec describes one sandbox. The zero value is a bubblewrap sandbox with
// a read-write workspace, no network and the default limits.
type Spec struct {
	// Backend is "bubblewrap" (default; "bwrap" too) or "docker".
	Backend string
	// WorkspaceAccess is "none", "ro" or "rw" ("" means rw).
	WorkspaceAccess string
	// Network is "none" (default) or "host" (bubblewrap only; Docker's
	// is Docker.Network).
	Network string
	Limits  Limits
	// Scope is "agent" (default), "session" or "shared": which sessions
	// share one sandbox (the Docker backend's container, and the private
	// workspace of access none and ro).
	Scope string
	// ScopeKey names the sandbox under Scope: the agent id, the session
	// key, or "shared". The daemon sets it.
	ScopeKey string
	// ScopeDir is the host directory of the scope's private workspace
	// (under sandbox.workspaceRoot): with workspaceAccess none or ro the
	// command's writable workspace, kept between commands. "" means a
	// private workspace that ends with each command.
	ScopeDir string
	// Docker configures the docker backend.
	Docker DockerSpec
}

// Sandbox scopes (agents.defaults.sandbox.scope).
const (
	ScopeAgent   = "agent"
	ScopeSession = "session"
	ScopeShared  = "shared"
)

// KeyFor returns the key of the sandbox a session of agentID gets under
// scope: the agent id, the session key, or "shared".
func KeyFor(scope, agentID, sessionKey string) string {
	switch scope {
	case ScopeSession:
		return sessionKey
	case ScopeShared:
		return ScopeShared
	}
	return agentID
}

// DirName is the directory (under sandbox.workspaceRoot) of the sandbox
// with key under scope: the scope, then a readable slug of the key and,
// unless the slug is the key itself, a hash that keeps distinct keys
// apart ("agent-main", "session-agent-main-work-1a2b3c4d", "shared").
func DirName(scope, key string) string {
	if scope == ScopeShared {
		return ScopeShared
	}
	return cmp.Or(scope, ScopeAgent) + "-" + keySlug(key)
}

func keySlug(key string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(key) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	slug := strings.Trim(b.String(), "-")
	if len(slug) > 48 {
		slug = slug[:48]
	}
	if slug == key && slug != "" {
		return slug
	}
	sum := sha256.Sum256([]byte(key))
	return cmp.Or(slug, "sandbox") + "-" + hex.EncodeToString(sum[:4])
}

// Normalized returns s with its defaults filled in.
func (s Spec) Normalized() Spec {
	switch s.Backend {
	case "", "bwrap":
		s.Backend = BackendBubblewrap
	}
	if s.WorkspaceAccess == "" {
		s.WorkspaceAccess = AccessRW
	}
	if s.Network == "" {
		s.Network = NetworkNone
	}
	if s.Scope == "" {
		s.Scope = ScopeAgent
	}
	def := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&s.Limits.CPUSeconds, DefaultCPUSeconds)
	def(&s.Limits.MemoryBytes, DefaultMemoryBytes)
	def(&s.Limits.Procs, DefaultProcs)
	def(&s.Limits.FileBytes, DefaultFileBytes)
	def(&s.Limits.TmpBytes, DefaultTmpBytes)
	def(&s.Limits.WorkspaceBytes, DefaultWorkspaceBytes)
	return s
}

// Validate reports a spec with an unknown backend, access level or
// network mode, or Docker settings the backend refuses.
func (s Spec) Validate() error {
	n := s.Normalized()
	switch n.WorkspaceAccess {
	case AccessNone, AccessRO, AccessRW:
	default:
		return fmt.Errorf("sandbox: workspaceAccess %q: want none, ro or rw", s.WorkspaceAccess)
	}
	switch n.Network {
	case NetworkNone, NetworkHost:
	default:
		return fmt.Errorf("sandbox: network %q: want none or host", s.Network)
	}
	switch n.Scope {
	case ScopeAgent, ScopeSession, ScopeShared:
	default:
		return fmt.Errorf("sandbox: scope %q: want agent, session or shared", s.Scope)
	}
	if s.ScopeDir != "" && !filepath.IsAbs(s.ScopeDir) {
		return fmt.Errorf("sandbox: scope workspace %q must be an absolute path", s.ScopeDir)
	}
	switch n.Backend {
	case BackendBubblewrap:
	case BackendDocker:
		return s.Docker.validate()
	default:
		return fmt.Errorf("sandbox: backend %q is not supported: want bubblewrap or docker", s.Backend)
	}
	return nil
}

// systemDirs are bound read-only when they exist.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// Args returns bwrap's arguments (without the program name) that run argv
// inside the sandbox, in directory cwd, with workspace bound per the spec.
// cwd must be the workspace or under it unless access is none, in which
// case the command starts in /tmp.
func (s Spec) Args(workspace, cwd string, argv []string) ([]string, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.Normalized().Backend != BackendBubblewrap {
		return nil, fmt.Errorf("sandbox: the %s backend does not run bubblewrap", s.Backend)
	}
	if len(argv) == 0 {
		return nil, errors.New("sandbox: empty command")
	}
	s = s.Normalized()
	a := []string{
		"--unshare-all", "--unshare-user",
		"--die-with-parent", "--new-session",
		"--uid", sandboxUID, "--gid", sandboxUID,
		"--cap-drop", "ALL",
		"--disable-userns",
		"--clearenv",
	}
	if s.Network == NetworkHost {
		a = append(a, "--share-net")
	}
	for _, d := range systemDirs {
		a = append(a, "--ro-bind-try", d, d)
	}
	a = append(a, "--proc", "/proc", "--dev", "/dev")
	tmpSize := strconv.FormatInt(s.Limits.TmpBytes, 10)
	for _, d := range []string{"/tmp", "/run", "/var/tmp"} {
		a = append(a, "--size", tmpSize, "--tmpfs", d)
	}
	dir := "/tmp"
	// The scope's private workspace (access none and ro) is bound
	// read-write at its own path, so that the file tools and the command
	// name the same files; with access none commands start in it.
	priv := ""
	if s.WorkspaceAccess != AccessRW && s.ScopeDir != "" {
		priv = filepath.Clean(s.ScopeDir)
		if s.WorkspaceAccess == AccessNone {
			a = append(a, "--bind", priv, priv)
			dir = priv
		}
	}
	under := func(c, root string) bool {
		return root != "" && (c == root || strings.HasPrefix(c, root+string(filepath.Separator)))
	}
	if s.WorkspaceAccess == AccessNone && priv != "" && cwd != "" {
		c := filepath.Clean(cwd)
		if !under(c, priv) {
			return nil, fmt.Errorf("sandbox: workdir %s is outside the sandbox workspace %s", cwd, priv)
		}
		dir = c
	}
	if s.WorkspaceAccess != AccessNone {
		if workspace == "" || !filepath.IsAbs(workspace) {
			return nil, fmt.Errorf("sandbox: workspace %q must be an absolute path", workspace)
		}
		ws := filepath.Clean(workspace)
		bind := "--bind"
		if s.WorkspaceAccess == AccessRO {
			bind = "--ro-bind"
		}
		a = append(a, bind, ws, ws)
		if priv != "" { // after the workspace: it wins should it lie inside
			a = append(a, "--bind", priv, priv)
		}
		dir = ws
		if cwd != "" {
			c := filepath.Clean(cwd)
			if !under(c, ws) && !under(c, priv) {
				return nil, fmt.Errorf("sandbox: workdir %s is outside the workspace %s", cwd, ws)
			}
			dir = c
		}
	}
	a = append(a, "--chdir", dir, "--")
	a = append(a, prlimitPath,
		"--cpu="+strconv.FormatInt(s.Limits.CPUSeconds, 10),
		"--as="+strconv.FormatInt(s.Limits.MemoryBytes, 10),
		"--nproc="+strconv.FormatInt(s.Limits.Procs, 10),
		"--fsize="+strconv.FormatInt(s.Limits.FileBytes, 10),
		"--")
	return append(a, argv...), nil
}

// prlimitPath sets the rlimits inside the sandbox (util-linux).
const prlimitPath = "/usr/bin/prlimit"

// Env is the environment of a sandboxed command: nothing of the gateway's
// (its token and keys stay out), only a fixed PATH, HOME=/tmp, LANG and
// the given extras ("K=V").
func Env(extra ...string) []string {
	env := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
		"HOME=/tmp",
		"TMPDIR=/tmp",
		"LANG=C.UTF-8",
	}
	return append(env, extra...)
}

// Command returns the bwrap command that runs argv confined by s, with the
// seccomp filter (see deniedSyscalls) passed in cmd.ExtraFiles: close
// those after starting it. Where a pids cgroup is writable the command is
// a small /bin/sh step that puts itself in a cgroup of its own with
// pids.max set to the process limit and then becomes bwrap. It fails
// closed when the backend is unavailable or cannot be bounded (see
// Check), and refuses to start while the scope's private workspace is
// over its quota; the command's RLIMIT_FSIZE is then at most what is left
// of it. Guard keeps the quota while the command runs.
func (s Spec) Command(ctx context.Context, workspace, cwd string, argv []string, env []string) (*exec.Cmd, error) {
	bwrap, err := Check(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	n := s.Normalized()
	if n.ScopeDir != "" && n.WorkspaceAccess != AccessRW {
		used, err := workspaceUsage(n.ScopeDir)
		if err != nil {
			return nil, fmt.Errorf("sandbox: scope workspace: %w", err)
		}
		if used > n.Limits.WorkspaceBytes {
			return nil, overQuota(n.ScopeDir, used, n.Limits.WorkspaceBytes)
		}
		// No single file passes what is left of the quota (RLIMIT_FSIZE;
		// 0 would read as the default).
		if left := n.Limits.WorkspaceBytes - used; left < n.Limits.FileBytes {
			n.Limits.FileBytes = max(left, 1)
		}
	}
	args, err := n.Args(workspace, cwd, argv)
	if err != nil {
		return nil, err
	}
	pidsDir, err := procBound()
	if err != nil {
		return nil, err
	}
	f, err := seccompFile()
	if err != nil {
		return nil, err
	}
	// The filter reaches bwrap as fd 3; the caller closes its copy in
	// cmd.ExtraFiles once the command started.
	args = append([]string{bwrap, "--seccomp", "3"}, args...)
	cmd := exec.Command(bwrap)
	cmd.Args = args
	if pidsDir != "" {
		sweepPidsGroups(pidsDir)
		cmd = exec.Command("/bin/sh", append([]string{"-c", joinPidsScript, "sandbox", pidsDir, strconv.FormatInt(n.Limits.Procs, 10)}, args...)...)
	}
	cmd.ExtraFiles = []*os.File{f}
	cmd.Env = env
	return cmd, nil
}

var probe struct {
	mu   sync.Mutex
	path string
	err  error
	done bool
}

// Check reports whether the bubblewrap backend works here: bwrap on PATH,
// prlimit present, and a trial sandbox with every namespace unshared
// starting. It returns bwrap's path. A success is remembered; a failure is
// retried on the next call (the operator may fix it without a restart).
func Check(ctx context.Context) (string, error) {
	probe.mu.Lock()
	defer probe.mu.Unlock()
	if probe.done {
		return probe.path, nil
	}
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return "", errors.New("sandbox unavailable: bwrap not found on PATH; install bubblewrap (apt-get install bubblewrap) or set sandbox.mode to \"off\"")
	}
	if _, err := os.Stat(prlimitPath); err != nil {
		return "", fmt.Errorf("sandbox unavailable: %s not found; install util-linux", prlimitPath)
	}
	if help, _ := exec.CommandContext(ctx, path, "--help").CombinedOutput(); !strings.Contains(string(help), "--size") {
		return "", errors.New("sandbox unavailable: this bwrap has no --size option, so the sandbox's tmpfs cannot be bounded; install bubblewrap 0.7.0 or later")
	}
	if _, err := procBound(); err != nil {
		return "", err
	}
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	args, _ := Spec{WorkspaceAccess: AccessNone}.Args("", "", []string{"/bin/true"})
	out, err := exec.CommandContext(tctx, path, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("sandbox unavailable: bwrap cannot create namespaces (%s: %w); enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces>0) or set sandbox.mode to \"off\"",
			strings.TrimSpace(string(out)), err)
	}
	probe.path, probe.done = path, true
	return path, nil
}

// Explain describes the sandbox a session gets, for `switchboard sandbox
// explain`.
func (s Spec) Explain(workspace string) string {
	n := s.Normalized()
	var b strings.Builder
	if n.Backend == BackendDocker {
		n.explainDocker(&b, workspace)
		return b.String()
	}
	fmt.Fprintf(&b, "backend: bubblewrap (user, mount, pid, ipc, uts, cgroup%s namespaces)\n", map[bool]string{true: ", net", false: ""}[n.Network == NetworkNone])
	switch {
	case n.WorkspaceAccess == AccessNone && n.ScopeDir != "":
		fmt.Fprintf(&b, "workspace: agent workspace not mounted (workspaceAccess none); sandbox workspace %s read-write, kept between commands\n", n.ScopeDir)
	case n.WorkspaceAccess == AccessNone:
		fmt.Fprintf(&b, "workspace: not mounted (workspaceAccess none); commands start in a private /tmp\n")
	case n.WorkspaceAccess == AccessRO:
		fmt.Fprintf(&b, "workspace: %s read-only\n", workspace)
		if n.ScopeDir != "" {
			fmt.Fprintf(&b, "sandbox workspace: %s read-write, kept between commands\n", n.ScopeDir)
		}
	default:
		fmt.Fprintf(&b, "workspace: %s read-write\n", workspace)
	}
	if n.ScopeKey != "" {
		fmt.Fprintf(&b, "scope: %s (%s)\n", n.Scope, n.ScopeKey)
	} else {
		fmt.Fprintf(&b, "scope: %s\n", n.Scope)
	}
	fmt.Fprintf(&b, "system dirs: %s read-only (when present)\n", strings.Join(systemDirs, " "))
	fmt.Fprintf(&b, "private: /tmp /run /var/tmp (tmpfs), /proc of the sandbox, minimal /dev\n")
	fmt.Fprintf(&b, "network: %s\n", n.Network)
	fmt.Fprintf(&b, "user: uid %s, no capabilities, no nested user namespaces\n", sandboxUID)
	fmt.Fprintf(&b, "limits: cpu %ds, memory %d bytes, processes %d, file size %d bytes\n",
		n.Limits.CPUSeconds, n.Limits.MemoryBytes, n.Limits.Procs, n.Limits.FileBytes)
	fmt.Fprintf(&b, "processes bounded by: %s\n", ProcessBound())
	fmt.Fprintf(&b, "disk: each private tmpfs %d bytes", n.Limits.TmpBytes)
	if q := n.explainQuota(); q != "" {
		b.WriteString("; " + q)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "seccomp: EPERM for %s\n", strings.Join(deniedSyscalls, " "))
	if _, err := Check(context.Background()); err != nil {
		fmt.Fprintf(&b, "status: %v\n", err)
	} else {
		fmt.Fprintf(&b, "status: available\n")
	}
	return b.String()
}
