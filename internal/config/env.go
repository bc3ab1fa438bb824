package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Environment variables read by this package.
const (
	EnvStateDir        = "SWITCHBOARD_STATE_DIR"
	EnvConfig          = "SWITCHBOARD_CONFIG"
	EnvOpenAIKey       = "OPENAI_API_KEY"
	EnvOpenAIBaseURL   = "OPENAI_BASE_URL"
	EnvAnthropicKey    = "ANTHROPIC_API_KEY"
	EnvGatewayToken    = "SWITCHBOARD_GATEWAY_TOKEN"
	EnvGatewayPassword = "SWITCHBOARD_GATEWAY_PASSWORD"
)

// Default base URLs of the implicit providers.
const (
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
)

// Env looks up an environment variable and returns "" when it is unset.
// All environment access in this package goes through an Env, so tests pass
// a MapEnv instead of touching the process environment.
type Env func(name string) string

// OSEnv is the process environment.
func OSEnv(name string) string { return os.Getenv(name) }

// MapEnv returns an Env backed by m.
func MapEnv(m map[string]string) Env {
	return func(name string) string { return m[name] }
}

func (e Env) get(name string) string {
	if e == nil {
		return ""
	}
	return strings.TrimSpace(e(name))
}

// Paths are the locations the gateway reads and writes.
type Paths struct {
	// StateDir holds sessions, workspaces and the config file. From
	// SWITCHBOARD_STATE_DIR, else ~/.switchboard.
	StateDir string
	// ConfigPath is the JSON5 config file. From SWITCHBOARD_CONFIG, else
	// <StateDir>/switchboard.json5.
	ConfigPath string
}

// ResolvePaths computes Paths from env. A leading "~" is expanded from HOME,
// and a relative path is made absolute from the working directory, as the
// reference resolves OPENCLAW_STATE_DIR: the gateway's lock record, the
// unit `service install` writes and every log line then name the one
// directory, whichever directory they are read from. It fails when neither
// SWITCHBOARD_STATE_DIR nor HOME is set, or when a relative path meets a
// working directory that is gone.
func ResolvePaths(env Env) (Paths, error) {
	p, err := resolvePaths(env)
	if err != nil {
		return Paths{}, err
	}
	if p.StateDir, err = filepath.Abs(p.StateDir); err != nil {
		return Paths{}, fmt.Errorf("config: the state directory %s: %w", p.StateDir, err)
	}
	if p.ConfigPath, err = filepath.Abs(p.ConfigPath); err != nil {
		return Paths{}, fmt.Errorf("config: the config file %s: %w", p.ConfigPath, err)
	}
	return p, nil
}

// resolvePaths is ResolvePaths before the paths are made absolute.
func resolvePaths(env Env) (Paths, error) {
	var p Paths
	if dir := env.get(EnvStateDir); dir != "" {
		p.StateDir = filepath.Clean(expandHome(dir, env))
	} else {
		home := env.get("HOME")
		if home == "" {
			return Paths{}, errors.New("config: cannot find the state directory: set " + EnvStateDir + " or HOME")
		}
		p.StateDir = filepath.Join(home, ".switchboard")
	}
	if f := env.get(EnvConfig); f != "" {
		p.ConfigPath = filepath.Clean(expandHome(f, env))
	} else {
		p.ConfigPath = filepath.Join(p.StateDir, "switchboard.json5")
	}
	return p, nil
}

// expandHome replaces a leading "~" or "~/" with HOME; other paths, and all
// paths when HOME is unset, are returned unchanged.
func expandHome(p string, env Env) string {
	home := env.get("HOME")
	if home == "" {
		return p
	}
	if p == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return p
}

// expandVars replaces every ${NAME} in s (NAME = [A-Z_][A-Z0-9_]*) with its
// value from env; "$${NAME}" stays a literal "${NAME}". It returns the names
// that were unset or empty.
func expandVars(s string, env Env) (string, []string) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	var missing []string
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), missing
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 || !envName(s[i+2:i+end]) {
			b.WriteString(s[:i+2])
			s = s[i+2:]
			continue
		}
		name := s[i+2 : i+end]
		if i > 0 && s[i-1] == '$' { // escaped: "$${NAME}" → "${NAME}"
			b.WriteString(s[:i-1])
			b.WriteString(s[i : i+end+1])
			s = s[i+end+1:]
			continue
		}
		b.WriteString(s[:i])
		v := env.get(name)
		if v == "" {
			missing = append(missing, name)
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

func envName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range []byte(s) {
		switch {
		case c >= 'A' && c <= 'Z', c == '_':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// envRef reports whether s is exactly one "${NAME}" reference, which is
// not a secret itself.
func envRef(s string) bool {
	name, ok := strings.CutPrefix(strings.TrimSpace(s), "${")
	if !ok {
		return false
	}
	name, ok = strings.CutSuffix(name, "}")
	return ok && envName(name)
}
