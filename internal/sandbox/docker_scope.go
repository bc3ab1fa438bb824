package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// Labels of Switchboard's sandbox containers.
const (
	// labelSandbox is "exec" on a one-command container, "scope" on a
	// scope's long-lived one.
	labelSandbox = "dev.switchboard.sandbox"
	labelScope   = "dev.switchboard.sandbox.scope"
	labelKey     = "dev.switchboard.sandbox.key"
	// labelConfig is the hash of the container's configuration: a
	// container whose hash differs from the current one is replaced.
	labelConfig = "dev.switchboard.sandbox.config"
)

// ExecMarkerVar tags the environment of every command run in a scope's
// container with a unique value, so that Kill finds all its processes,
// also those that left its process group or session.
const ExecMarkerVar = "SWITCHBOARD_EXEC"

// pendingSuffix ends the name of a scope container whose setupCommand has
// not finished: it is renamed when it has, and one found with the suffix
// (the gateway stopped during setup) is replaced.
const pendingSuffix = "-setup"

// setupTimeout bounds docker.setupCommand.
const setupTimeout = 15 * time.Minute

// keepAlive is a scope container's main process: it idles until the
// container is stopped. Commands run beside it with docker exec; the init
// process (HostConfig.Init) reaps what they leave.
var keepAlive = []string{"/bin/sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 86400 & wait $!; done"}

// scopeTarget is the long-lived container a scope wants.
type scopeTarget struct {
	key, scope string
	name       string // without pendingSuffix
	hash       string
	setup      string
	user       string
	workdir    string
	cfg        *containerConfig
	hc         *hostConfig
}

// scopeTarget returns the container of s's scope (s.ScopeKey set) whose
// host workspace is workspace: the keep-alive command under the
// confinement ContainerConfig gives a command, labelled with the scope
// and the hash of its configuration, and named after both.
func (s Spec) scopeTarget(workspace string) (*scopeTarget, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	s = s.Normalized()
	d := s.Docker.normalized()
	ws, err := s.hostWorkspace(workspace)
	if err != nil {
		return nil, err
	}
	hc, err := s.hostConfig(ws)
	if err != nil {
		return nil, err
	}
	cfg := &containerConfig{
		Image:      d.Image,
		Cmd:        slices.Clone(keepAlive),
		Entrypoint: []string{},
		Env:        d.baseEnv(),
		WorkingDir: d.Workdir,
		User:       d.User,
		Labels:     map[string]string{labelSandbox: "scope", labelScope: s.Scope, labelKey: s.ScopeKey},
	}
	t := &scopeTarget{key: s.ScopeKey, scope: s.Scope, setup: strings.TrimSpace(d.SetupCommand), user: d.User, workdir: d.Workdir, cfg: cfg, hc: hc}
	b, err := json.Marshal(struct {
		Config     *containerConfig
		HostConfig *hostConfig
		Setup      string
	}{cfg, hc, t.setup})
	if err != nil {
		return nil, fmt.Errorf("sandbox: hash container config: %w", err)
	}
	sum := sha256.Sum256(b)
	t.hash = hex.EncodeToString(sum[:8])
	cfg.Labels[labelConfig] = t.hash
	id := sha256.Sum256([]byte(s.ScopeKey + "\x00" + t.hash))
	t.name = d.ContainerPrefix + slug(s.ScopeKey) + "-" + hex.EncodeToString(id[:5])
	return t, nil
}

// slug returns key as a fragment of a container name: lower case
// letters, digits, '.', '_' and '-', at most 40 bytes.
func slug(key string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(key) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
		if b.Len() >= 40 {
			break
		}
	}
	return strings.Trim(b.String(), "-.")
}

// scopeState is what the backend knows of one scope's container. Its
// mutex serializes finding, creating and setting it up, so that
// concurrent commands of a scope share one container.
type scopeState struct {
	mu   sync.Mutex
	id   string // "" until found or created
	hash string
	// stale are containers of the scope with an old configuration that
	// still ran a command when it changed, removed once idle.
	stale []string
}

// containerUse counts the commands running in a scope container and
// when the last one ended, for Prune.
type containerUse struct {
	busy int
	last time.Time
}

// scope returns the state of key, making it on first use.
func (d *Docker) scope(key string) *scopeState {
	d.smu.Lock()
	defer d.smu.Unlock()
	if d.scopes == nil {
		d.scopes = map[string]*scopeState{}
	}
	st := d.scopes[key]
	if st == nil {
		st = &scopeState{}
		d.scopes[key] = st
	}
	return st
}

// use returns the use record of container id, making it when mk is set
// (nil otherwise when there is none). d.smu is held.
func (d *Docker) use(id string, mk bool) *containerUse {
	if d.uses == nil {
		d.uses = map[string]*containerUse{}
	}
	u := d.uses[id]
	if u == nil && mk {
		u = &containerUse{}
		d.uses[id] = u
	}
	return u
}

// touch records a use of container id now; busy adds to its running
// commands.
func (d *Docker) touch(id string, busy int) {
	d.smu.Lock()
	defer d.smu.Unlock()
	u := d.use(id, true)
	u.busy += busy
	u.last = time.Now()
}

// usage returns how many commands run in container id and when it was
// last used (zero when this process has not used it).
func (d *Docker) usage(id string) (busy int, last time.Time) {
	d.smu.Lock()
	defer d.smu.Unlock()
	if u := d.use(id, false); u != nil {
		return u.busy, u.last
	}
	return 0, time.Time{}
}

// forget drops container id from the scope state and use records.
func (d *Docker) forget(st *scopeState, id string) {
	if st.id == id {
		st.id, st.hash = "", ""
	}
	d.smu.Lock()
	delete(d.uses, id)
	d.smu.Unlock()
}

// acquire ensures t's container runs and counts a command in it. It
// returns the container's id.
func (d *Docker) acquire(ctx context.Context, cli *engine, t *scopeTarget) (string, error) {
	st := d.scope(t.key)
	st.mu.Lock()
	defer st.mu.Unlock()
	id, err := d.ensure(ctx, cli, st, t)
	if err != nil {
		return "", err
	}
	d.touch(id, 1)
	return id, nil
}

// release ends the count of a command in container id.
func (d *Docker) release(id string) { d.touch(id, -1) }

// invalidate forgets container id of t's scope after the daemon refused
// an exec in it (removed or stopped behind the backend's back).
func (d *Docker) invalidate(t *scopeTarget, id string) {
	st := d.scope(t.key)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.id == id {
		st.id, st.hash = "", ""
	}
}

// ensure returns the running container of t, st.mu held: the one known,
// else one of the daemon's with t's scope key and configuration hash
// (started again when stopped), else a new one set up with
// docker.setupCommand. Containers of the scope with another
// configuration are removed unless a command still runs in them.
func (d *Docker) ensure(ctx context.Context, cli *engine, st *scopeState, t *scopeTarget) (string, error) {
	d.dropStale(cli, st)
	if st.id != "" && st.hash == t.hash {
		return st.id, nil
	}
	st.id, st.hash = "", ""
	found, err := d.list(ctx, cli, labelKey+"="+t.key)
	if err != nil {
		return "", err
	}
	var reuse *containerSummary
	for i, c := range found {
		if reuse == nil && c.Labels[labelConfig] == t.hash && slices.Contains(c.Names, "/"+t.name) {
			reuse = &found[i]
			continue
		}
		if busy, _ := d.usage(c.ID); busy > 0 {
			if !slices.Contains(st.stale, c.ID) {
				st.stale = append(st.stale, c.ID)
			}
			continue
		}
		if err := d.removeContainer(cli, c.ID); err != nil {
			return "", err
		}
		d.forget(st, c.ID)
	}
	if reuse != nil {
		if err := d.revive(ctx, cli, reuse); err == nil {
			st.id, st.hash = reuse.ID, t.hash
			d.touch(reuse.ID, 0)
			return reuse.ID, nil
		}
		// It would not start again: replace it.
		if err := d.removeContainer(cli, reuse.ID); err != nil {
			return "", err
		}
		d.forget(st, reuse.ID)
	}
	id, err := d.create(ctx, cli, t)
	if err != nil {
		return "", err
	}
	st.id, st.hash = id, t.hash
	d.touch(id, 0)
	return id, nil
}

// dropStale removes the stale containers of st that no longer run a
// command, st.mu held.
func (d *Docker) dropStale(cli *engine, st *scopeState) {
	st.stale = slices.DeleteFunc(st.stale, func(id string) bool {
		if busy, _ := d.usage(id); busy > 0 {
			return false
		}
		if d.removeContainer(cli, id) != nil {
			return false
		}
		d.forget(st, id)
		return true
	})
}

// list returns the scope containers of the daemon (running or not) with
// every label filter ("key=value") given.
func (d *Docker) list(ctx context.Context, cli *engine, labels ...string) ([]containerSummary, error) {
	res, err := cli.containerList(ctx, append([]string{labelSandbox + "=scope"}, labels...)...)
	if err != nil {
		return nil, fmt.Errorf("sandbox: list sandbox containers: %w", err)
	}
	return res, nil
}

// revive starts c again unless it runs.
func (d *Docker) revive(ctx context.Context, cli *engine, c *containerSummary) error {
	if c.State == stateRunning {
		return nil
	}
	if err := cli.containerStart(ctx, c.ID); err != nil {
		return fmt.Errorf("sandbox: start container %s again: %w", shortID(c.ID), err)
	}
	return nil
}

// create makes, starts and sets up t's container. A container that
// fails on the way is removed.
func (d *Docker) create(ctx context.Context, cli *engine, t *scopeTarget) (string, error) {
	if err := d.ensureImage(ctx, cli, t.cfg.Image); err != nil {
		return "", err
	}
	name := t.name
	if t.setup != "" {
		name += pendingSuffix
	}
	id, err := cli.containerCreate(ctx, name, t.cfg, t.hc)
	if err != nil {
		return "", fmt.Errorf("sandbox: create container %s: %w", name, err)
	}
	fail := func(err error) (string, error) {
		if rerr := d.removeContainer(cli, id); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return "", err
	}
	if err := cli.containerStart(ctx, id); err != nil {
		return fail(fmt.Errorf("sandbox: start container %s: %w", name, err))
	}
	if t.setup == "" {
		return id, nil
	}
	if err := d.runSetup(ctx, cli, id, t); err != nil {
		return fail(err)
	}
	if err := cli.containerRename(ctx, id, t.name); err != nil {
		return fail(fmt.Errorf("sandbox: rename container %s after its setupCommand: %w", name, err))
	}
	return id, nil
}

// setupTail is how much of setupCommand's output a failure shows.
const setupTail = 2000

// runSetup runs docker.setupCommand in container id with sh -lc, as the
// container's user in docker.workdir, and fails unless it exits 0.
func (d *Docker) runSetup(ctx context.Context, cli *engine, id string, t *scopeTarget) error {
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	out := &tailBuffer{max: setupTail}
	ex, err := startExec(ctx, cli, id, execConfig{
		User: t.user, WorkingDir: t.workdir, Cmd: []string{"sh", "-lc", t.setup},
		AttachStdout: true, AttachStderr: true,
	}, out)
	if err != nil {
		return fmt.Errorf("sandbox: docker.setupCommand: %w", err)
	}
	stop := context.AfterFunc(ctx, ex.close)
	defer stop()
	code, err := ex.wait(ctx)
	ex.close()
	if err != nil {
		return fmt.Errorf("sandbox: docker.setupCommand did not finish: %w", err)
	}
	if code != 0 {
		return fmt.Errorf("sandbox: docker.setupCommand exited with code %d in a new container of scope %s %q, which was removed; "+
			"output (tail):\n%s\ncommon causes: docker.network \"none\" (no downloads), docker.readOnlyRoot true (packages cannot be installed), "+
			"a non-root docker.user (no permission to install)", code, t.scope, t.key, strings.TrimSpace(out.String()))
	}
	return nil
}

// removeContainer deletes container id, with what still runs in it.
func (d *Docker) removeContainer(cli *engine, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := cli.containerRemove(ctx, id)
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("sandbox: remove container %s: %w", shortID(id), err)
	}
	return nil
}

// startScoped runs r with docker exec in the container of s's scope,
// making the container when it has none.
func (d *Docker) startScoped(ctx context.Context, s Spec, r Run) (*Container, error) {
	if len(r.Argv) == 0 {
		return nil, errors.New("sandbox: empty command")
	}
	t, err := s.scopeTarget(r.Workspace)
	if err != nil {
		return nil, err
	}
	n := s.Normalized()
	ws, _ := n.hostWorkspace(r.Workspace) // checked by scopeTarget
	dir, err := n.containerDir(ws, r.Dir)
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
	marker := ExecMarkerVar + "=" + randomID() + randomID()
	// The command's own value of the marker variable, if any, would hide
	// it from Kill.
	env := slices.DeleteFunc(slices.Clone(r.Env), func(kv string) bool { return strings.HasPrefix(kv, ExecMarkerVar+"=") })
	opts := execConfig{
		User: t.user, WorkingDir: dir, Cmd: slices.Clone(r.Argv),
		Env:          append(env, marker),
		AttachStdin:  r.Stdin,
		AttachStdout: true, AttachStderr: true,
	}
	out := r.Output
	if out == nil {
		out = io.Discard
	}
	for attempt := 0; ; attempt++ {
		id, err := d.acquire(ctx, cli, t)
		if err != nil {
			return nil, err
		}
		ex, err := startExec(ctx, cli, id, opts, out)
		if err == nil {
			return d.newExecContainer(cli, id, ex, marker, t.user, r.Stdin), nil
		}
		d.release(id)
		// The container went away or stopped behind our back: find or
		// make it again, once.
		if attempt > 0 || !(isNotFound(err) || isConflict(err)) {
			return nil, fmt.Errorf("sandbox: exec in container %s: %w", shortID(id), err)
		}
		d.invalidate(t, id)
	}
}

// execution is one exec'd process with its attached streams.
type execution struct {
	cli    *engine
	id     string
	attach *hijacked
	copied chan struct{} // closed when the output stream ended

	closeOnce sync.Once
}

// startExec creates and starts an exec in container id, copying its
// output to out.
func startExec(ctx context.Context, cli *engine, id string, opts execConfig, out io.Writer) (*execution, error) {
	execID, err := cli.execCreate(ctx, id, opts)
	if err != nil {
		return nil, err
	}
	att, err := cli.execStart(ctx, execID)
	if err != nil {
		return nil, fmt.Errorf("start exec: %w", err)
	}
	ex := &execution{cli: cli, id: execID, attach: att, copied: make(chan struct{})}
	go func() {
		defer close(ex.copied)
		_ = demux(out, out, ex.attach)
	}()
	return ex, nil
}

// close ends the attached streams.
func (ex *execution) close() { ex.closeOnce.Do(func() { _ = ex.attach.Close() }) }

// execPoll is how often wait asks the daemon whether the exec still runs
// while its output stream is open (a process it left may hold it).
const execPoll = 200 * time.Millisecond

// execStartLimit bounds how long an exec may look not yet started (no
// process id) while its stream is open.
const execStartLimit = time.Minute

// wait waits for the exec to end and its output to arrive (within
// outputGrace), and returns its exit code. The daemon answers the attach
// before it starts the process, so an exec that does not run, has no
// process id and an open stream has not started yet.
func (ex *execution) wait(ctx context.Context) (int, error) {
	copied := ex.copied
	interval := execPoll
	failures := 0
	begun := time.Now()
	for {
		t := time.NewTimer(interval)
		select {
		case <-copied:
			// The stream ended; the exit follows at once.
			copied, interval = nil, 10*time.Millisecond
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return -1, ctx.Err()
		}
		t.Stop()
		ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := ex.cli.execInspect(ictx, ex.id)
		cancel()
		switch {
		case err != nil && (isNotFound(err) || failures >= 3):
			return -1, fmt.Errorf("exec %s: %w", shortID(ex.id), err)
		case err != nil:
			failures++
		case !res.Running && res.Pid == 0 && copied != nil && time.Since(begun) < execStartLimit:
			// Not started yet.
		case !res.Running:
			g := time.NewTimer(outputGrace)
			defer g.Stop()
			select {
			case <-ex.copied:
			case <-g.C:
			}
			return exitCode(res), nil
		default:
			if copied == nil {
				interval = min(2*interval, execPoll)
			}
		}
	}
}

// waitStarted returns once the exec's process started (or ended, or
// ctx is done).
func (ex *execution) waitStarted(ctx context.Context) {
	for {
		res, err := ex.cli.execInspect(ctx, ex.id)
		if err != nil || res.Running || res.Pid != 0 {
			return
		}
		select {
		case <-ex.copied:
			return
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// newExecContainer returns the Container of a command exec'd in
// container id.
func (d *Docker) newExecContainer(cli *engine, id string, ex *execution, marker, user string, stdin bool) *Container {
	c := &Container{cli: cli, id: id, attach: ex.attach, copied: ex.copied,
		exec: &execCommand{d: d, ex: ex, marker: marker, user: user}}
	if stdin {
		c.stdin = &containerStdin{c: c}
	}
	return c
}

// execCommand is the exec side of a Container run in a scope's
// container.
type execCommand struct {
	d      *Docker
	ex     *execution
	marker string // ExecMarkerVar=<id> in the command's environment
	user   string

	released sync.Once
}

// waitExec is Wait of a command exec'd in a scope's container.
func (c *Container) waitExec() (int, string, error) {
	e := c.exec
	defer e.end(c.id)
	code, err := e.ex.wait(context.Background())
	e.ex.close()
	if c.killed.Load() && (err != nil || code == 128+9) {
		return -1, "SIGKILL", nil
	}
	if err != nil {
		return -1, "", fmt.Errorf("container %s: %w", shortID(c.id), err)
	}
	return code, "", nil
}

// end releases the container for Prune once the command ended.
func (e *execCommand) end(id string) {
	e.released.Do(func() { e.d.release(id) })
}

// killScript kills, as the command's user, every process of the
// container whose environment holds marker, in rounds until none is left
// (a process may fork while the round runs). POSIX sh.
func killScript(marker string) string {
	return `i=0
while [ "$i" -lt 10 ]; do
  n=0
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" = "$$" ] && continue
    if tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qx '` + marker + `'; then
      kill -9 "${p#/proc/}" 2>/dev/null && n=$((n+1))
    fi
  done
  [ "$n" -eq 0 ] && break
  i=$((i+1))
done`
}

// killExec is Kill of a command exec'd in a scope's container: a second
// exec kills every process carrying the command's marker. When that
// cannot run, the streams are closed so that Wait returns.
func (c *Container) killExec() {
	e := c.exec
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A process not started yet would escape the scan.
	e.ex.waitStarted(ctx)
	k, err := startExec(ctx, c.cli, c.id, execConfig{
		User: e.user, Cmd: []string{"/bin/sh", "-c", killScript(e.marker)},
		AttachStdout: true, AttachStderr: true,
	}, io.Discard)
	if err != nil {
		e.ex.close()
		return
	}
	stop := context.AfterFunc(ctx, k.close)
	defer stop()
	if _, err := k.wait(ctx); err != nil {
		e.ex.close()
	}
	k.close()
}

// exitCode is an ended exec's exit code (0 when the daemon gave none,
// as the SDK reads it).
func exitCode(r execInspect) int {
	if r.ExitCode == nil {
		return 0
	}
	return *r.ExitCode
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
