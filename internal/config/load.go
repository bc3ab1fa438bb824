package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"reflect"
	"strings"

	"github.com/titanous/json5"
)

// maxNesting bounds how deeply objects and arrays may nest in a config
// file; real configs need fewer than ten levels.
const maxNesting = 64

// MaxFileBytes bounds the size of a config file. Real configs are a few
// kilobytes; the bound keeps a runaway or hostile file from costing memory
// before it is refused.
const MaxFileBytes = 4 << 20

// Load reads the config file at path with the process environment. An
// empty path means SWITCHBOARD_CONFIG or <stateDir>/switchboard.json5. See
// LoadEnv.
func Load(path string) (*Config, []Warning, error) { return LoadEnv(path, OSEnv) }

// LoadEnv reads the JSON5 config file at path (empty: the ConfigPath from
// ResolvePaths(env)) and applies env. A missing file is not an error: the
// result is the default configuration. Otherwise it behaves like Parse, and
// Paths().ConfigPath is path.
func LoadEnv(path string, env Env) (*Config, []Warning, error) {
	if path == "" {
		p, err := ResolvePaths(env)
		if err != nil {
			return nil, nil, err
		}
		path = p.ConfigPath
	}
	data, err := readLimited(path, MaxFileBytes)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("config.Load: %w", err)
	}
	return parse(path, data, env, path)
}

// Parse decodes the JSON5 text data (name is used in messages, usually the
// file name) and applies env; a nil env is an empty environment. Text that
// is empty or holds only comments gives the default configuration.
//
// Unknown and repeated keys are reported as Warnings. All other problems,
// from a syntax error to a bad enum value, come back together as one
// *ValidationError; the Config is then nil. Warnings are returned either
// way, sorted by line.
func Parse(name string, data []byte, env Env) (*Config, []Warning, error) {
	return parse(name, data, env, "")
}

func parse(name string, data []byte, env Env, configPath string) (*Config, []Warning, error) {
	if env == nil {
		env = MapEnv(nil)
	}
	c := &Config{file: name, env: env}
	var problems []Problem
	var warnings []Warning

	paths, err := ResolvePaths(env)
	if err != nil {
		problems = append(problems, Problem{Path: EnvStateDir, Message: "cannot find the state directory: set " + EnvStateDir + " or HOME"})
	}
	if configPath != "" {
		paths.ConfigPath = configPath
	}
	c.paths = paths

	tree, src, p := decodeTree(name, data)
	if p != nil {
		return nil, nil, &ValidationError{Problems: append(problems, *p)}
	}
	c.src = src

	for _, d := range src.dups {
		warnings = append(warnings, Warning{File: name, Line: d.line, Path: d.path.String(), Message: "duplicate key; the last value is used"})
	}
	bad := make(map[string]bool) // paths with a type problem
	dec := &decoder{
		warn: func(p keyPath, msg string) {
			warnings = append(warnings, Warning{File: name, Line: src.lineOf(p), Path: p.String(), Message: msg})
		},
		fail: func(p keyPath, msg string) {
			bad[p.String()] = true
			problems = append(problems, Problem{File: name, Line: src.lineOf(p), Path: p.String(), Message: msg})
		},
	}
	dec.object(nil, tree, reflect.ValueOf(c).Elem())

	vp, vw := c.check()
	for _, p := range vp {
		if !bad[p.Path] { // already reported as the wrong type
			problems = append(problems, p)
		}
	}
	warnings = append(warnings, vw...)
	sortByLine(problems, func(p Problem) int { return p.Line })
	sortByLine(warnings, func(w Warning) int { return w.Line })
	if len(problems) > 0 {
		return nil, warnings, &ValidationError{Problems: problems}
	}
	return c, warnings, nil
}

// decodeTree parses data into a generic object tree and maps its key
// positions. Empty or comment-only text is an empty object.
func decodeTree(name string, data []byte) (tree map[string]any, src *sourceMap, p *Problem) {
	// Size and depth first, in one linear pass: the key map and the
	// decoder cost memory that grows with depth.
	if len(data) > MaxFileBytes {
		return nil, nil, &Problem{File: name, Message: fmt.Sprintf("the file is %d bytes; at most %d are allowed", len(data), MaxFileBytes)}
	}
	if depth, line := nesting(data); depth > maxNesting {
		return nil, nil, &Problem{File: name, Line: line, Message: fmt.Sprintf("objects and arrays nest %d deep; at most %d levels are allowed", depth, maxNesting)}
	}
	src = scanSource(data)
	if !src.tokens {
		return map[string]any{}, src, nil
	}
	var v any
	if err := unmarshal(data, &v); err != nil {
		line := 0
		var se *json5.SyntaxError
		var te *json5.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			line = lineAtOffset(data, int(se.Offset)-1)
		case errors.As(err, &te):
			line = lineAtOffset(data, int(te.Offset)-1)
		}
		msg := strings.TrimPrefix(err.Error(), "json: ")
		return nil, nil, &Problem{File: name, Line: line, Message: "invalid JSON5: " + msg}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, nil, &Problem{File: name, Line: src.lines[""], Message: "the top level must be an object, got " + describe(v)}
	}
	return obj, src, nil
}

// unmarshal runs the JSON5 decoder, turning a panic inside it into an
// error so that no input can crash the gateway.
func unmarshal(data []byte, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot decode: %v", r)
		}
	}()
	return json5.Unmarshal(data, v)
}

// Flags are the command-line overrides, the last configuration layer. Zero
// fields are not given.
type Flags struct {
	Port     int
	Bind     string
	AuthMode string
	Token    string
	Password string
}

// ApplyFlags returns a copy of c with f applied and validated again.
// Problems caused by a flag name "flags" as their file. On error the
// returned Config is nil. The copy shares c's nested sections, lists and
// maps, which no one changes once a Config is loaded; only the fields the
// flags set are its own (a deep copy through JSON was a tenth of the
// gateway's start).
func (c *Config) ApplyFlags(f Flags) (*Config, []Warning, error) {
	out := new(Config)
	*out = *c
	out.origins = maps.Clone(c.origins)
	set := func(p keyPath) {
		if out.origins == nil {
			out.origins = make(map[string]string)
		}
		out.origins[p.String()] = "flags"
	}
	if f.Port != 0 {
		out.Gateway.Port = &f.Port
		set(path("gateway", "port"))
	}
	if f.Bind != "" {
		out.Gateway.Bind = f.Bind
		set(path("gateway", "bind"))
	}
	if f.AuthMode != "" {
		out.Gateway.Auth.Mode = f.AuthMode
		set(path("gateway", "auth", "mode"))
	}
	if f.Token != "" {
		out.Gateway.Auth.Token = f.Token
		set(path("gateway", "auth", "token"))
	}
	if f.Password != "" {
		out.Gateway.Auth.Password = f.Password
		set(path("gateway", "auth", "password"))
	}
	problems, warnings := out.check()
	if len(problems) > 0 {
		return nil, warnings, &ValidationError{Problems: problems}
	}
	return out, warnings, nil
}

// origin returns where the value at p came from when that was not the
// file, or "".
func (c *Config) origin(p keyPath) string {
	return c.origins[p.String()]
}

// readLimited reads the file at path, failing without reading it all when
// it is larger than limit.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes; a config file may have at most %d", path, fi.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes, the most a config file may have", path, limit)
	}
	return data, nil
}
