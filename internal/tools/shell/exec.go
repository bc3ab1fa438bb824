package shell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/tools"
)

// ToolName is exec's wire name.
const ToolName = "exec"

// Defaults of Config.
const (
	// DefaultTimeout is tools.exec.timeoutSeconds' default.
	DefaultTimeout = 1800 * time.Second
	// DefaultMaxOutputBytes is the default output cap.
	DefaultMaxOutputBytes = 200_000
	// DefaultShell runs the command.
	DefaultShell = "/bin/sh"
	// pipeGrace is how long output pipes held open by leftover background
	// processes are waited for after the shell exits.
	pipeGrace = 500 * time.Millisecond
)

// Config configures the exec tool. The zero value uses the defaults.
type Config struct {
	// Timeout is the default per-command limit (tools.exec.timeoutSeconds);
	// 0 means DefaultTimeout, a negative value no limit.
	Timeout time.Duration
	// MaxOutputBytes caps the output returned (head and tail kept); 0 means
	// DefaultMaxOutputBytes.
	MaxOutputBytes int
	// SkillEnv returns what an agent's skills add to a host command's
	// environment (skills.entries env and apiKey); nil adds nothing.
	// Sandboxed commands never get it.
	SkillEnv func(agentID string) map[string]string
	// PathPrepend lists directories put in front of PATH
	// (tools.exec.pathPrepend).
	PathPrepend []string
	// Shell is the shell run with -c; "" means DefaultShell.
	Shell string
	// Sandbox, when set, confines every command: it returns the command
	// that runs argv inside the sandbox, or an error (the backend is
	// unavailable, the workdir is outside its view) and nothing runs.
	Sandbox Confiner
	// Runner, when set, runs every command instead (a container engine);
	// it takes precedence over Sandbox.
	Runner Runner
	// Jobs, when set, lets commands go to the background (yieldMs,
	// background) for the process tool to follow; nil runs every command
	// in the foreground, ignoring those arguments.
	Jobs *Jobs
}

// Confiner wraps a command in a sandbox (internal/sandbox's Spec).
type Confiner interface {
	Command(ctx context.Context, workspace, cwd string, argv []string, env []string) (*exec.Cmd, error)
}

// Guarder is a Confiner or Runner that also bounds each command while it
// runs (the sandbox's workspace quota, internal/sandbox's Spec.Guard).
// Guard is called before the command starts and an error means nothing
// runs; start is called once it runs, with its process id on the host (0
// when it has none there) and the function that kills it and everything
// it started; stop, once it ended or failed to start, ends
// the guard and says why it stopped the command ("" when it did not).
type Guarder interface {
	Guard() (start func(pid int, kill func()), stop func() string, err error)
}

// Tool is the exec tool. Safe for concurrent use.
type Tool struct {
	cfg Config
}

var _ tools.Tool = (*Tool)(nil)

// New returns the exec tool with cfg's defaults applied.
func New(cfg Config) *Tool {
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxOutputBytes <= 0 {
		cfg.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if cfg.Shell == "" {
		cfg.Shell = DefaultShell
	}
	return &Tool{cfg: cfg}
}

var schema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "Shell command, run with /bin/sh -c."},
    "workdir": {"type": "string", "description": "Working directory; relative paths start at the workspace (the default)."},
    "env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Environment overrides on top of the inherited environment (PATH and loader variables cannot be set)."},
    "timeoutSeconds": {"type": "number", "minimum": 0, "description": "Kill the command and its children after this many seconds; 0 disables the limit."},
    "yieldMs": {"type": "number", "minimum": 0, "description": "Move the command to the background after this many milliseconds (default 10000); follow it with the process tool."},
    "background": {"type": "boolean", "description": "Start the command in the background at once; follow it with the process tool."},
    "pty": {"type": "boolean", "description": "Accepted for compatibility; no terminal is allocated."},
    "host": {"type": "string", "enum": ["auto", "sandbox", "gateway", "node"], "description": "Where to run; only the gateway host is available."},
    "ask": {"type": "string", "enum": ["off", "on-miss", "always"]},
    "elevated": {"type": "boolean"}
  },
  "required": ["command"]
}`)

// Name implements tools.Tool.
func (*Tool) Name() string { return ToolName }

// Label is the tool's display name.
func (*Tool) Label() string { return "Exec" }

// Description implements tools.Tool.
func (*Tool) Description() string {
	return "Run a shell command in your workspace and get its output (stdout and stderr) and exit code. " +
		"Long output is cut in the middle. The command and everything it starts are killed at the timeout."
}

// Schema implements tools.Tool.
func (*Tool) Schema() json.RawMessage { return schema }

// Details is exec's structured result.
type Details struct {
	// Status is "completed" (the shell exited by itself), "failed", or
	// "running" (moved to the background).
	Status   string `json:"status"`
	ExitCode *int   `json:"exitCode"`
	// ExitSignal names the signal that ended the shell, if one did.
	ExitSignal string `json:"exitSignal,omitempty"`
	DurationMs int64  `json:"durationMs"`
	TimedOut   bool   `json:"timedOut,omitempty"`
	// Truncated is set when output was left out of the middle.
	Truncated bool   `json:"truncated,omitempty"`
	Cwd       string `json:"cwd"`
	// SessionID and PID name a command moved to the background (status
	// "running"), for the process tool.
	SessionID string `json:"sessionId,omitempty"`
	PID       int    `json:"pid,omitempty"`
}

// Call runs the command and waits for it.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
	req, err := parseArgs(args)
	if err != nil {
		return nil, err
	}
	cwd, err := workdir(tools.CallerFrom(ctx).Workspace, req.Workdir)
	if err != nil {
		return nil, err
	}
	timeout := t.cfg.Timeout
	if req.HasTimeout {
		timeout = req.Timeout
		if timeout == 0 {
			timeout = -1
		}
	}
	out := newCapBuffer(t.cfg.MaxOutputBytes)
	caller := tools.CallerFrom(ctx)
	j := &job{
		id: newJobID(), agent: caller.AgentID, command: req.Command, out: out,
		pending: newPendingBuffer(pendingMax), timeout: timeout, done: make(chan struct{}),
		guardStop: func() string { return "" },
	}
	output := io.MultiWriter(out, j.pending)
	// A backgrounded command can be written to (process write).
	background := t.cfg.Jobs != nil
	j.start = time.Now()
	guardStart := func(int, func()) {}
	switch {
	case t.cfg.Runner != nil:
		if guardStart, j.guardStop, err = guard(t.cfg.Runner); err != nil {
			return nil, err
		}
		j.proc, err = t.cfg.Runner.Start(ctx, Command{
			Workspace: resolvedWorkspace(caller.Workspace), Dir: cwd,
			Argv: []string{t.cfg.Shell, "-c", req.Command}, Env: callEnv(req.Env),
			Output: output, Stdin: background,
		})
		if err != nil {
			j.guardStop()
			return nil, fmt.Errorf("exec: %w", err)
		}
	default:
		var cmd *exec.Cmd
		if t.cfg.Sandbox != nil {
			if cmd, err = t.sandboxed(ctx, cwd, req); err != nil {
				return nil, err
			}
			if guardStart, j.guardStop, err = guard(t.cfg.Sandbox); err != nil {
				for _, f := range cmd.ExtraFiles {
					_ = f.Close()
				}
				return nil, err
			}
		} else {
			cmd = exec.Command(t.cfg.Shell, "-c", req.Command)
			cmd.Dir = cwd
			var skillEnv map[string]string
			if t.cfg.SkillEnv != nil {
				skillEnv = t.cfg.SkillEnv(tools.CallerFrom(ctx).AgentID)
			}
			cmd.Env = t.environ(req.Env, skillEnv)
		}
		if j.proc, err = startCmd(cmd, output, background); err != nil {
			j.guardStop()
			return nil, fmt.Errorf("exec: %w", err)
		}
	}
	guardStart(j.proc.PID(), j.proc.Kill)
	j.stdin = j.proc.Stdin()
	go j.watch(cwd)

	var yield <-chan time.Time
	if background {
		d := t.cfg.Jobs.cfg.Yield
		if req.HasYield {
			d = req.Yield
		}
		if req.Background {
			d = 0
		}
		tm := time.NewTimer(d)
		defer tm.Stop()
		yield = tm.C
	}
	select {
	case <-j.done:
	case <-yield:
		select {
		case <-j.done: // ended just now: answer in the foreground
		default:
			if err := t.cfg.Jobs.add(j); err != nil {
				j.kill()
				<-j.done
				return nil, err
			}
			return j.runningResult(cwd), nil
		}
	case <-ctx.Done():
		j.kill()
		<-j.done
		return nil, fmt.Errorf("exec: command was canceled: %w", context.Cause(ctx))
	}
	if j.stdin != nil {
		_ = j.stdin.Close()
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.result == nil {
		return nil, errors.New("exec: the command ended without a result")
	}
	return j.result, nil
}

// guard returns the guard of c when it is a Guarder, else one that does
// nothing.
func guard(c any) (start func(pid int, kill func()), stop func() string, err error) {
	g, ok := c.(Guarder)
	if !ok {
		return func(int, func()) {}, func() string { return "" }, nil
	}
	if start, stop, err = g.Guard(); err != nil {
		return nil, nil, fmt.Errorf("exec: %w", err)
	}
	return start, stop, nil
}

// runningResult is exec's answer for a command moved to the background:
// its session id for the process tool, and the output so far.
func (j *job) runningResult(cwd string) *tools.Result {
	tail, _ := j.out.String()
	if len(tail) > 2000 {
		tail = "…" + string(trimPartialRuneStart([]byte(tail[len(tail)-2000:])))
	}
	pid := j.proc.PID()
	text := fmt.Sprintf("Command still running (session %s, pid %d). Use process (poll, log, write, send-keys, kill) with sessionId %q to follow it.", j.id, pid, j.id)
	if tail != "" {
		text += "\n\n" + tail
	}
	return &tools.Result{Text: text, Details: &Details{Status: "running", SessionID: j.id, PID: pid, Cwd: cwd,
		DurationMs: time.Since(j.start).Milliseconds()}}
}

// finalResult is exec's answer for a command that ended: its output and
// exit status in the reference's words.
func finalResult(code int, sig string, werr error, out *capBuffer, took time.Duration, cwd string, timedOut bool, timeout time.Duration) *tools.Result {
	d := &Details{DurationMs: took.Milliseconds(), Cwd: cwd, TimedOut: timedOut}
	text, truncated := out.String()
	d.Truncated = truncated
	if werr != nil {
		d.Status = "failed"
		return &tools.Result{Details: d, IsError: true, Text: joinOutput(text, "exec: wait: "+werr.Error())}
	}
	if sig == "" {
		d.ExitCode = &code
	} else {
		d.ExitSignal = sig
	}
	switch {
	case timedOut:
		d.Status = "failed"
		secs := formatSeconds(timeout)
		return &tools.Result{Details: d, Text: joinOutput(text, fmt.Sprintf(
			"Command timed out after %s seconds.\n\nThe command and the processes it started were killed; "+
				"anything it did before that may have taken effect, so check the state before running it again.", secs))}
	case sig != "":
		d.Status = "failed"
		return &tools.Result{Details: d, Text: joinOutput(text, "Command aborted by signal "+sig)}
	case code == 127:
		d.Status = "failed"
		return &tools.Result{Details: d, Text: joinOutput(text, "Command not found")}
	case code == 126:
		d.Status = "failed"
		return &tools.Result{Details: d, Text: joinOutput(text, "Command not executable (permission denied)")}
	}
	d.Status = "completed"
	if code != 0 {
		return &tools.Result{Details: d, Text: fmt.Sprintf("%s\n\n(Command exited with code %d)", orNoOutput(text), code)}
	}
	return &tools.Result{Details: d, Text: orNoOutput(text)}
}

// sandboxed returns the command confined by t.cfg.Sandbox. Its
// environment holds none of the gateway's variables (its token and keys
// stay outside), only a fixed PATH, HOME=/tmp and the call's overrides.
func (t *Tool) sandboxed(ctx context.Context, cwd string, req request) (*exec.Cmd, error) {
	ws := resolvedWorkspace(tools.CallerFrom(ctx).Workspace)
	env := append([]string{
		"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
		"HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8",
	}, callEnv(req.Env)...)
	cmd, err := t.cfg.Sandbox.Command(ctx, ws, cwd, []string{t.cfg.Shell, "-c", req.Command}, env)
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	return cmd, nil
}

// resolvedWorkspace is ws with symlinks resolved, as sandboxes mount it.
func resolvedWorkspace(ws string) string {
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		return real
	}
	return ws
}

// callEnv is what a confined command gets of the call: SWITCHBOARD_SHELL
// and OPENCLAW_SHELL set to "exec", then the call's overrides, sorted.
func callEnv(over map[string]string) []string {
	env := []string{"SWITCHBOARD_SHELL=exec", "OPENCLAW_SHELL=exec"}
	for _, k := range slices.Sorted(maps.Keys(over)) {
		env = append(env, k+"="+over[k])
	}
	return env
}

// Foreground returns a copy of t that runs every command in the
// foreground (for runs that are not offered the process tool).
func (t *Tool) Foreground() *Tool {
	cfg := t.cfg
	cfg.Jobs = nil
	return &Tool{cfg: cfg}
}

// WithSandbox returns a copy of t whose commands c confines.
func (t *Tool) WithSandbox(c Confiner) *Tool {
	cfg := t.cfg
	cfg.Sandbox, cfg.Runner = c, nil
	return &Tool{cfg: cfg}
}

// WithRunner returns a copy of t whose commands r runs.
func (t *Tool) WithRunner(r Runner) *Tool {
	cfg := t.cfg
	cfg.Sandbox, cfg.Runner = nil, r
	return &Tool{cfg: cfg}
}

// environ is the command's environment: the gateway's, PATH with
// PathPrepend in front, SWITCHBOARD_SHELL and OPENCLAW_SHELL set to
// "exec", then the skills' variables the gateway's environment lacks
// (Config.SkillEnv), then the call's overrides.
func (t *Tool) environ(over, skillEnv map[string]string) []string {
	env := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := env[k]; !ok {
			order = append(order, k)
		}
		env[k] = v
	}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			set(k, v)
		}
	}
	if len(t.cfg.PathPrepend) > 0 {
		path := strings.Join(t.cfg.PathPrepend, string(os.PathListSeparator))
		if old := env["PATH"]; old != "" {
			path += string(os.PathListSeparator) + old
		}
		set("PATH", path)
	}
	set("SWITCHBOARD_SHELL", "exec")
	set("OPENCLAW_SHELL", "exec")
	for k, v := range skillEnv {
		if _, ok := env[k]; !ok {
			set(k, v)
		}
	}
	for k, v := range over {
		set(k, v)
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+env[k])
	}
	return out
}

// workdir resolves the directory a command runs in: the workspace, or
// dir (relative to the workspace) when given. It must exist.
func workdir(workspace, dir string) (string, error) {
	base := strings.TrimSpace(workspace)
	if base == "" && (dir == "" || !filepath.IsAbs(dir)) {
		return "", errors.New("no workspace: this session has no workspace directory; give an absolute workdir")
	}
	p := base
	switch {
	case dir == "":
	case filepath.IsAbs(dir):
		p = dir
	default:
		p = filepath.Join(base, dir)
	}
	if dir == "" {
		if err := os.MkdirAll(p, 0o700); err != nil {
			return "", fmt.Errorf("workspace unavailable: %w", err)
		}
	}
	fi, err := os.Stat(p)
	if err != nil || !fi.IsDir() {
		return "", fmt.Errorf("workdir unavailable: %s is not an existing directory", cmpOr(dir, p))
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	return p, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// joinOutput puts reason after the command's output, if any.
func joinOutput(output, reason string) string {
	if output == "" {
		return reason
	}
	return output + "\n\n" + reason
}

func orNoOutput(s string) string {
	if s == "" {
		return "(no output)"
	}
	return s
}

// formatSeconds prints d in seconds without a trailing ".0".
func formatSeconds(d time.Duration) string {
	s := d.Seconds()
	if s == float64(int64(s)) {
		return fmt.Sprintf("%d", int64(s))
	}
	return fmt.Sprintf("%g", s)
}
