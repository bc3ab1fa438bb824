package daemon

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/logfile"
)

// slogLevel maps the reference's level names onto slog levels.
func slogLevel(name string) slog.Level {
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
func redactSecrets(_ []string, a slog.Attr) slog.Attr {
	k := strings.ToLower(a.Key)
	for _, s := range secretKeys {
		if strings.Contains(k, s) && a.Value.Kind() == slog.KindString && a.Value.String() != "" {
			return slog.String(a.Key, "[redacted]")
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

// logSetup is the gateway's logger: the console (stderr) at the console
// level in text or JSON, and the log file, always JSON lines, at the file
// level.
type logSetup struct {
	logger *slog.Logger
	file   *logfile.Writer // nil when the file could not be opened
}

// newLogSetup builds the logger from the resolved settings; level and
// format, when set (serve's --log-level and --log-format), override the
// console and file levels and the console format. A log file that cannot
// be opened is reported on the console and logging goes on without it.
func newLogSetup(ls config.LogSettings, level, format string, console io.Writer) (*logSetup, error) {
	if level != "" {
		level = strings.ToLower(strings.TrimSpace(level))
		if !slices.Contains(config.LogLevels, level) {
			return nil, fmt.Errorf("daemon: --log-level %q: want one of %s", level, strings.Join(config.LogLevels, ", "))
		}
		ls.Level, ls.ConsoleLevel = level, level
	}
	consoleJSON := ls.ConsoleStyle == "json"
	switch strings.ToLower(strings.TrimSpace(format)) {
	case "":
	case "text":
		consoleJSON = false
	case "json":
		consoleJSON = true
	default:
		return nil, fmt.Errorf("daemon: --log-format %q: want text or json", format)
	}
	copts := &slog.HandlerOptions{Level: slogLevel(ls.ConsoleLevel), ReplaceAttr: redactSecrets}
	var ch slog.Handler = slog.NewTextHandler(console, copts)
	if consoleJSON {
		ch = slog.NewJSONHandler(console, copts)
	}
	ls2 := &logSetup{}
	handlers := []slog.Handler{ch}
	f, err := logfile.Open(ls.File, logfile.Options{MaxBytes: ls.MaxFileBytes})
	if err != nil {
		slog.New(ch).Warn("no log file: logging to the console only", "err", err)
	} else {
		ls2.file = f
		handlers = append(handlers, slog.NewJSONHandler(f, &slog.HandlerOptions{Level: slogLevel(ls.Level), ReplaceAttr: fileAttr}))
	}
	ls2.logger = slog.New(slog.NewMultiHandler(handlers...))
	return ls2, nil
}

// Close closes the log file.
func (l *logSetup) Close() error {
	if l == nil || l.file == nil {
		return nil
	}
	return l.file.Close()
}

// path is the log file's path, or "" when there is none.
func (l *logSetup) path() string {
	if l == nil || l.file == nil {
		return ""
	}
	return l.file.Path()
}
