package daemon

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard/internal/logfile"
	"github.com/switchboardhq/switchboard/internal/settings"
)

// newLogSetup builds the gateway's logger from the resolved settings; level
// and format, when set (serve's --log-level and --log-format), override
// the console and file levels and the console format.
func newLogSetup(ls settings.LogSettings, level, format string, console io.Writer) (*logfile.Logger, error) {
	if level != "" {
		level = strings.ToLower(strings.TrimSpace(level))
		if levels := settings.LogLevels(); !slices.Contains(levels, level) {
			return nil, fmt.Errorf("daemon: --log-level %q: want one of %s", level, strings.Join(levels, ", "))
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
	return logfile.NewLogger(logfile.Settings{Level: ls.Level, ConsoleLevel: ls.ConsoleLevel, ConsoleJSON: consoleJSON,
		File: ls.File, MaxFileBytes: ls.MaxFileBytes}, console), nil
}
