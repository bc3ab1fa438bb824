package config

import (
	"path/filepath"
	"strings"
)

// EnvLogLevel overrides logging.level and logging.consoleLevel (the
// reference's OPENCLAW_LOG_LEVEL); serve's --log-level wins over it.
const EnvLogLevel = "SWITCHBOARD_LOG_LEVEL"

// LogLevels are the reference's log levels, quietest first.
var LogLevels = []string{"silent", "fatal", "error", "warn", "info", "debug", "trace"}

// LogSettings is the "logging" section resolved once: levels normalised
// (env applied), the file path made absolute, defaults filled in.
type LogSettings struct {
	Level        string // file level, one of LogLevels
	ConsoleLevel string // console level, one of LogLevels
	ConsoleStyle string // "pretty" or "json"
	File         string // the log file
	MaxFileBytes int64  // 0 means the writer's default
}

// LogSettings resolves the logging section. The file defaults to
// <stateDir>/logs/switchboard.log; a relative logging.file is taken
// relative to the state dir.
func (c *Config) LogSettings() LogSettings {
	l := c.Logging
	s := LogSettings{
		Level:        oneOf(l.Level, "info", LogLevels...),
		ConsoleStyle: oneOf(l.ConsoleStyle, "pretty", "pretty", "json"),
		File:         filepath.Join(c.paths.StateDir, "logs", "switchboard.log"),
	}
	s.ConsoleLevel = oneOf(l.ConsoleLevel, s.Level, LogLevels...)
	if v := norm(c.env.get(EnvLogLevel)); v != "" && oneOf(v, "", LogLevels...) != "" {
		s.Level, s.ConsoleLevel = v, v
	}
	if f := strings.TrimSpace(l.File); f != "" {
		f = expandHome(f, c.env)
		if !filepath.IsAbs(f) {
			f = filepath.Join(c.paths.StateDir, f)
		}
		s.File = filepath.Clean(f)
	}
	if l.MaxFileBytes != nil && *l.MaxFileBytes > 0 {
		s.MaxFileBytes = int64(*l.MaxFileBytes)
	}
	return s
}
