package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLogSettings(t *testing.T) {
	env := map[string]string{EnvStateDir: "/state", "HOME": "/home/u"}
	for _, tc := range []struct {
		name string
		src  string
		env  map[string]string
		want LogSettings
	}{
		{"defaults", `{}`, nil, LogSettings{Level: "info", ConsoleLevel: "info", ConsoleStyle: "pretty", File: "/state/logs/switchboard.log"}},
		{"set", `{logging:{level:"DEBUG", consoleLevel:"warn", consoleStyle:"json", file:"~/sb.log", maxFileBytes:1000}}`, nil,
			LogSettings{Level: "debug", ConsoleLevel: "warn", ConsoleStyle: "json", File: "/home/u/sb.log", MaxFileBytes: 1000}},
		{"console follows level", `{logging:{level:"error"}}`, nil, LogSettings{Level: "error", ConsoleLevel: "error", ConsoleStyle: "pretty", File: "/state/logs/switchboard.log"}},
		{"relative file", `{logging:{file:"x/y.log"}}`, nil, LogSettings{Level: "info", ConsoleLevel: "info", ConsoleStyle: "pretty", File: "/state/x/y.log"}},
		{"env wins", `{logging:{level:"error", consoleLevel:"warn"}}`, map[string]string{EnvLogLevel: "trace"},
			LogSettings{Level: "trace", ConsoleLevel: "trace", ConsoleStyle: "pretty", File: "/state/logs/switchboard.log"}},
		{"bad env ignored", `{}`, map[string]string{EnvLogLevel: "loud"}, LogSettings{Level: "info", ConsoleLevel: "info", ConsoleStyle: "pretty", File: "/state/logs/switchboard.log"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := map[string]string{}
			for k, v := range env {
				e[k] = v
			}
			for k, v := range tc.env {
				e[k] = v
			}
			c, _, err := Parse("test.json5", []byte(tc.src), MapEnv(e))
			if err != nil {
				t.Fatal(err)
			}
			c.paths, _ = ResolvePaths(MapEnv(e))
			if diff := cmp.Diff(tc.want, c.LogSettings()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{`{logging:{level:"loud"}}`, `{logging:{consoleLevel:"x"}}`, `{logging:{consoleStyle:"compact"}}`, `{logging:{maxFileBytes:0}}`} {
		if _, _, err := Parse("test.json5", []byte(bad), MapEnv(env)); err == nil || !strings.Contains(err.Error(), "logging.") {
			t.Errorf("%s: err = %v", bad, err)
		}
	}
}
