package logfile

import (
	"io"
	"log/slog"
	"math"
)

// Level maps the reference's level names onto slog levels.
func Level(name string) slog.Level {
	switch name {
	case "trace":
		return slog.LevelDebug - 4
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	case "fatal":
		return slog.LevelError + 4
	case "silent":
		return slog.Level(math.MaxInt32)
	}
	return slog.LevelInfo
}

// secretKeys are attribute names whose values are never logged.
var secretKeys = []string{"token", "password", "secret", "apikey", "api_key", "authorization", "cookie"}

// redactSecrets replaces the value of any attribute whose name looks like a
// secret, wherever a caller put one.
func redactSecrets(groups []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() != slog.KindString || a.Value.String() == "" {
		return levelText(groups, a)
	}
	for _, s := range secretKeys {
		if containsFold(a.Key, s) {
			return slog.String(a.Key, "[redacted]")
		}
	}
	return a
}

// containsFold reports whether s contains the lower-case ASCII word sub,
// in any case, without making a lower-case copy of s.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		j := 0
		for ; j < len(sub); j++ {
			if c := s[i+j]; c != sub[j] && c|0x20 != sub[j] { // |0x20 lower-cases an ASCII letter
				break
			}
		}
		if j == len(sub) {
			return true
		}
	}
	return false
}

// levelText gives the record's level as its text, which both handlers
// write as they write the level itself, but without the reflection (and
// allocations) that a level attribute costs once a ReplaceAttr is set.
func levelText(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.LevelKey {
		if l, ok := a.Value.Any().(slog.Level); ok {
			return slog.String(a.Key, l.String())
		}
	}
	return a
}

// fileAttr shapes a log file line: the message under "message" (where the
// reference's log readers, such as `openclaw logs`, look for it) and
// secrets redacted.
func fileAttr(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 {
		switch a.Key {
		case slog.MessageKey:
			a.Key = "message"
			return a
		case "message": // an attribute must not shadow the message
			a.Key = "messageAttr"
		}
	}
	return redactSecrets(groups, a)
}

// Settings are the resolved logging section: the file's and the
// console's levels (the reference's names), the console's format, the
// file and its size bound (0: the writer's default).
type Settings struct {
	Level        string
	ConsoleLevel string
	ConsoleJSON  bool
	File         string
	MaxFileBytes int64
}

// Logger is the gateway's logger: the console at the console level in
// text or JSON, and the log file, always JSON lines, at the file level;
// attributes whose names look like a secret are redacted in both.
type Logger struct {
	*slog.Logger
	file *Writer // nil when the file could not be opened
}

// NewLogger builds the logger of s. A log file that cannot be opened is
// reported on the console and logging goes on without it.
func NewLogger(s Settings, console io.Writer) *Logger {
	copts := &slog.HandlerOptions{Level: Level(s.ConsoleLevel), ReplaceAttr: redactSecrets}
	var ch slog.Handler = slog.NewTextHandler(console, copts)
	if s.ConsoleJSON {
		ch = slog.NewJSONHandler(console, copts)
	}
	l := &Logger{}
	handlers := []slog.Handler{ch}
	f, err := Open(s.File, Options{MaxBytes: s.MaxFileBytes})
	if err != nil {
		slog.New(ch).Warn("no log file: logging to the console only", "err", err)
	} else {
		l.file = f
		handlers = append(handlers, slog.NewJSONHandler(f, &slog.HandlerOptions{Level: Level(s.Level), ReplaceAttr: fileAttr}))
	}
	l.Logger = slog.New(slog.NewMultiHandler(handlers...))
	return l
}

// Close closes the log file.
func (l *Logger) Close() error {
	if l == nil || l.file == nil {
		return nil
	}
	return l.file.Close()
}

// Path is the log file's path, or "" when there is none.
func (l *Logger) Path() string {
	if l == nil || l.file == nil {
		return ""
	}
	return l.file.Path()
}
