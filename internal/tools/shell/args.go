package shell

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/lazy"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// request is a validated exec call.
type request struct {
	Command string
	// Workdir is the directory asked for ("" = the workspace).
	Workdir string
	// Env holds overrides merged over the inherited environment.
	Env map[string]string
	// Timeout is the per-call limit when HasTimeout; 0 disables it.
	Timeout    time.Duration
	HasTimeout bool
	// Yield is how long to wait before backgrounding, when HasYield.
	Yield    time.Duration
	HasYield bool
	// Background starts the command in the background at once.
	Background bool
}

// maxTimeoutSeconds bounds timeoutSeconds (one week), keeping the
// duration far from overflow.
const maxTimeoutSeconds = 7 * 24 * 3600

// envKeyPattern is the pattern of an environment variable's name,
// compiled on first use (the package has no init-time work).
var envKeyPattern = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
}}

// envKeyRE returns the pattern of an environment variable's name.
func envKeyRE() *regexp.Regexp { return envKeyPattern.Get() }

// parseArgs validates exec's arguments: {command, workdir?, env?,
// timeoutSeconds?, yieldMs?, background?, host?} plus the reference's pty,
// ask and elevated, which are accepted and do not change how the command
// runs here.
func parseArgs(raw json.RawMessage) (request, error) {
	var in struct {
		Command        *string         `json:"command"`
		Workdir        *string         `json:"workdir"`
		Env            json.RawMessage `json:"env"`
		TimeoutSeconds json.RawMessage `json:"timeoutSeconds"`
		Host           *string         `json:"host"`
		YieldMs        json.RawMessage `json:"yieldMs"`
		Background     json.RawMessage `json:"background"`
	}
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return request{}, fmt.Errorf("invalid arguments: %w", err)
	}
	var r request
	if in.Command == nil || strings.TrimSpace(*in.Command) == "" {
		return r, errors.New("command required")
	}
	r.Command = *in.Command
	if strings.ContainsRune(r.Command, 0) {
		return r, errors.New("command must not contain NUL bytes")
	}
	if in.Workdir != nil {
		r.Workdir = strings.TrimSpace(*in.Workdir)
		if strings.ContainsRune(r.Workdir, 0) {
			return r, errors.New("workdir must not contain NUL bytes")
		}
	}
	if in.Host != nil {
		switch h := strings.TrimSpace(*in.Host); h {
		case "", "auto", "gateway":
		case "sandbox":
			return r, errors.New("exec host=sandbox: no sandbox runtime is configured for this session; refusing to run the command on the gateway host")
		case "node":
			return r, errors.New("exec host=node: no paired node is available")
		default:
			return r, fmt.Errorf("invalid host %q: use auto, sandbox, gateway or node", h)
		}
	}
	if len(in.TimeoutSeconds) > 0 && string(in.TimeoutSeconds) != "null" {
		var secs float64
		if err := json.Unmarshal(in.TimeoutSeconds, &secs); err != nil || math.IsNaN(secs) || secs < 0 {
			return r, fmt.Errorf("timeoutSeconds must be a non-negative number of seconds, got %s", in.TimeoutSeconds)
		}
		secs = min(secs, maxTimeoutSeconds)
		r.Timeout, r.HasTimeout = time.Duration(secs*float64(time.Second)), true
		if secs > 0 && r.Timeout < time.Millisecond {
			r.Timeout = time.Millisecond
		}
	}
	if len(in.YieldMs) > 0 && string(in.YieldMs) != "null" {
		var ms float64
		if err := json.Unmarshal(in.YieldMs, &ms); err != nil || math.IsNaN(ms) || ms < 0 {
			return r, fmt.Errorf("yieldMs must be a non-negative number of milliseconds, got %s", in.YieldMs)
		}
		r.Yield, r.HasYield = time.Duration(min(ms, maxTimeoutSeconds*1000)*float64(time.Millisecond)), true
	}
	if len(in.Background) > 0 && string(in.Background) != "null" {
		if err := json.Unmarshal(in.Background, &r.Background); err != nil {
			return r, fmt.Errorf("background must be true or false, got %s", in.Background)
		}
	}
	if len(in.Env) > 0 && string(in.Env) != "null" {
		var env map[string]any
		if err := json.Unmarshal(in.Env, &env); err != nil {
			return r, errors.New("env must be an object of string values")
		}
		var blocked, invalid []string
		r.Env = make(map[string]string, len(env))
		for k, v := range env {
			s, ok := v.(string)
			switch {
			case !envKeyRE().MatchString(k):
				invalid = append(invalid, k)
				continue
			case tools.BlockedExecEnv(k):
				blocked = append(blocked, k)
				continue
			case !ok:
				return r, fmt.Errorf("env.%s must be a string", k)
			case strings.ContainsRune(s, 0):
				return r, fmt.Errorf("env.%s must not contain NUL bytes", k)
			}
			r.Env[k] = s
		}
		if err := tools.ExecEnvViolation(blocked, invalid); err != nil {
			return r, err
		}
	}
	return r, nil
}
