package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/statedir"
)

// Service unit names: the systemd user unit and the launchd agent label.
const (
	systemdUnit   = "switchboard.service"
	launchdLabel  = "dev.switchboard.gateway"
	envSvcManager = "SWITCHBOARD_SERVICE_MANAGER" // "systemd" or "launchd": overrides the OS default (tests)
)

// serviceSpec is what a service definition runs.
type serviceSpec struct {
	Exe      string            // absolute path of the switchboard binary
	Args     []string          // after the binary: serve and its flags
	Env      map[string]string // SWITCHBOARD_STATE_DIR and friends, when set
	LogDir   string            // launchd: where stdout/stderr go
	EnvFile  string            // systemd: an optional file of more variables
	WorkDir  string
	HomePath string
}

// systemdUnitText renders a systemd user unit that runs serve and restarts
// it on failure.
func systemdUnitText(s serviceSpec) string {
	var b strings.Builder
	b.WriteString("# Written by `switchboard service install`; remove with `switchboard service uninstall`.\n")
	b.WriteString("[Unit]\nDescription=Switchboard AI agent gateway\nAfter=network-online.target\nWants=network-online.target\n\n")
	b.WriteString("[Service]\nType=simple\n")
	fmt.Fprintf(&b, "ExecStart=%s\n", systemdQuoteArgs(append([]string{s.Exe}, s.Args...)))
	for _, k := range sortedEnvKeys(s.Env) {
		fmt.Fprintf(&b, "Environment=%s\n", systemdQuote(k+"="+s.Env[k]))
	}
	if s.EnvFile != "" {
		// "-": a missing file is no error. The path is taken as it is
		// (no quotes); "%" is still systemd's specifier character.
		fmt.Fprintf(&b, "EnvironmentFile=-%s\n", strings.ReplaceAll(s.EnvFile, "%", "%%"))
	}
	if s.WorkDir != "" {
		fmt.Fprintf(&b, "WorkingDirectory=%s\n", systemdQuote(s.WorkDir))
	}
	b.WriteString("Restart=on-failure\nRestartSec=2s\n# SIGTERM lets running runs finish (SWITCHBOARD_SHUTDOWN_GRACE).\nKillSignal=SIGTERM\nTimeoutStopSec=30s\n\n")
	b.WriteString("[Install]\nWantedBy=default.target\n")
	return b.String()
}

// systemdQuote quotes one word for a unit file: double quotes with
// backslash escapes, and "%" doubled (systemd's specifier character).
func systemdQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "%", "%%", "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

func systemdQuoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = systemdQuote(a)
	}
	return strings.Join(q, " ")
}

// launchdPlistText renders a launchd agent that keeps serve running.
func launchdPlistText(s serviceSpec) string {
	esc := html.EscapeString
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">` + "\n")
	b.WriteString("<plist version=\"1.0\">\n<dict>\n")
	fmt.Fprintf(&b, "  <key>Label</key><string>%s</string>\n", launchdLabel)
	b.WriteString("  <key>ProgramArguments</key>\n  <array>\n")
	for _, a := range append([]string{s.Exe}, s.Args...) {
		fmt.Fprintf(&b, "    <string>%s</string>\n", esc(a))
	}
	b.WriteString("  </array>\n")
	if len(s.Env) > 0 {
		b.WriteString("  <key>EnvironmentVariables</key>\n  <dict>\n")
		for _, k := range sortedEnvKeys(s.Env) {
			fmt.Fprintf(&b, "    <key>%s</key><string>%s</string>\n", esc(k), esc(s.Env[k]))
		}
		b.WriteString("  </dict>\n")
	}
	if s.WorkDir != "" {
		fmt.Fprintf(&b, "  <key>WorkingDirectory</key><string>%s</string>\n", esc(s.WorkDir))
	}
	b.WriteString("  <key>RunAtLoad</key><true/>\n")
	b.WriteString("  <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>\n")
	if s.LogDir != "" {
		fmt.Fprintf(&b, "  <key>StandardOutPath</key><string>%s</string>\n", esc(filepath.Join(s.LogDir, "service.out.log")))
		fmt.Fprintf(&b, "  <key>StandardErrorPath</key><string>%s</string>\n", esc(filepath.Join(s.LogDir, "service.err.log")))
	}
	b.WriteString("</dict>\n</plist>\n")
	return b.String()
}

func sortedEnvKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// serviceManager is the OS service manager a definition is installed into.
type serviceManager struct {
	name string // "systemd" or "launchd"
	path string // where the definition file goes
	text func(serviceSpec) string
	// install/uninstall/status run the manager's own commands.
	install, uninstall, status [][]string
	// mainPID asks the manager for the pid of the service's process, and
	// parsePID reads it from the answer (0: not running or unknown).
	mainPID  []string
	parsePID func(out string) int
}

func pickServiceManager(env settings.Env) (*serviceManager, error) {
	home := strings.TrimSpace(env("HOME"))
	if home == "" {
		return nil, errors.New("service: HOME is not set")
	}
	name := strings.TrimSpace(env(envSvcManager))
	if name == "" {
		switch runtime.GOOS {
		case "linux":
			name = "systemd"
		case "darwin":
			name = "launchd"
		default:
			return nil, fmt.Errorf("service: no supported service manager on %s (systemd user units on Linux, launchd on macOS); run `switchboard serve` under your own supervisor", runtime.GOOS)
		}
	}
	switch name {
	case "systemd":
		dir := strings.TrimSpace(env("XDG_CONFIG_HOME"))
		if dir == "" {
			dir = filepath.Join(home, ".config")
		}
		return &serviceManager{
			name: name, path: filepath.Join(dir, "systemd", "user", systemdUnit), text: systemdUnitText,
			install:   [][]string{{"systemctl", "--user", "daemon-reload"}, {"systemctl", "--user", "enable", "--now", systemdUnit}},
			uninstall: [][]string{{"systemctl", "--user", "disable", "--now", systemdUnit}, {"systemctl", "--user", "daemon-reload"}},
			status:    [][]string{{"systemctl", "--user", "status", "--no-pager", systemdUnit}},
			mainPID:   []string{"systemctl", "--user", "show", "--property", "MainPID", "--value", systemdUnit},
			parsePID:  func(out string) int { n, _ := strconv.Atoi(strings.TrimSpace(out)); return n },
		}, nil
	case "launchd":
		path := filepath.Join(home, "Library", "LaunchAgents", launchdLabel+".plist")
		return &serviceManager{
			name: name, path: path, text: launchdPlistText,
			install:   [][]string{{"launchctl", "load", "-w", path}},
			uninstall: [][]string{{"launchctl", "unload", "-w", path}},
			status:    [][]string{{"launchctl", "list", launchdLabel}},
			mainPID:   []string{"launchctl", "list", launchdLabel},
			parsePID:  launchdPID,
		}, nil
	}
	return nil, fmt.Errorf("service: unknown service manager %q (want systemd or launchd)", name)
}

// launchdPID reads the "PID" = N; line of `launchctl list <label>`.
func launchdPID(out string) int {
	for line := range strings.Lines(out) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok && strings.TrimSpace(k) == `"PID"` {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), ";"))
			return n
		}
	}
	return 0
}

// servicePID returns the pid of the service's running process, 0 when it
// is not running or the manager cannot say.
func (m *serviceManager) servicePID(ctx context.Context) int {
	out, err := exec.CommandContext(ctx, m.mainPID[0], m.mainPID[1:]...).Output()
	if err != nil {
		return 0
	}
	return m.parsePID(string(out))
}

// foregroundGateway returns the gateway running from stateDir when it is
// not the service's own process: a serve started by hand, which holds the
// state dir so that the service's serve would fail at each restart until
// the manager gave up.
func foregroundGateway(ctx context.Context, m *serviceManager, stateDir string) (statedir.Record, bool) {
	rec, ok, err := statedir.Running(stateDir)
	if err != nil || !ok || rec.PID == 0 {
		return statedir.Record{}, false
	}
	if m.servicePID(ctx) == rec.PID {
		return statedir.Record{}, false
	}
	return rec, true
}

// serviceEnvFile is the file in the state dir the systemd unit reads more
// variables from: those of the installing shell the gateway uses.
const serviceEnvFile = "service.env"

// daemonEnv are variables serve reads beyond the config's.
var daemonEnv = []string{"SWITCHBOARD_SHUTDOWN_GRACE", "SWITCHBOARD_NODE_ID", "SWITCHBOARD_ANNOUNCE_EXPIRY", "SWITCHBOARD_TIMER_SLACK", "SWITCHBOARD_GC_FLOOR"}

// serviceEnvVars returns the variables set in env that serve would read
// with the config at configPath (API keys, gateway secrets, the config's
// "${NAME}" references, the database URL) and the daemon's own, less
// those the definition carries itself. A service does not inherit the
// installing shell's environment: without these, the service's gateway
// would fall back to the offline model or fail to load its config.
func serviceEnvVars(env settings.Env, configPath string) map[string]string {
	got := map[string]string{}
	record := func(name string) string {
		v := env(name)
		if strings.TrimSpace(v) != "" {
			got[name] = v
		}
		return v
	}
	_, _, _ = settings.Load(configPath, record) // only the variables it reads matter here
	for _, name := range daemonEnv {
		record(name)
	}
	for name := range got {
		switch {
		case name == "HOME" || name == "PATH" || name == "USER" || strings.HasPrefix(name, "XDG_"),
			name == settings.EnvStateDir || name == settings.EnvConfig:
			delete(got, name)
		}
	}
	return got
}

// writeServiceEnv writes vars into the env file at path (mode 0600),
// keeping the lines of variables it does not set; it returns the names
// written and those left out (a value with a newline cannot be written:
// such a variable keeps the line it had, if any).
func writeServiceEnv(path string, vars map[string]string) (written, skipped []string, err error) {
	var keep []string
	if old, err := os.ReadFile(path); err == nil {
		for line := range strings.Lines(string(old)) {
			line = strings.TrimRight(line, "\n")
			name, _, _ := strings.Cut(line, "=")
			v, set := vars[strings.TrimSpace(name)]
			if (!set || strings.ContainsAny(v, "\r\n")) && strings.TrimSpace(line) != "" {
				keep = append(keep, line)
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	for _, name := range sortedEnvKeys(vars) {
		v := vars[name]
		if strings.ContainsAny(v, "\r\n") {
			skipped = append(skipped, name)
			continue
		}
		// Double quotes, with systemd's escapes of \ " ` and $.
		keep = append(keep, name+`="`+strings.NewReplacer(`\`, `\\`, `"`, `\"`, "`", "\\`", `$`, `\$`).Replace(v)+`"`)
		written = append(written, name)
	}
	if len(keep) == 0 {
		return nil, skipped, nil
	}
	return written, skipped, writeFileAtomic(path, []byte(strings.Join(keep, "\n")+"\n"), 0o600)
}

// servicePort returns the --port the service's serve gets, and where it
// came from when not from the flag: --port when given; else the port of
// the gateway running from stateDir (started with serve --port), so that
// the service comes back where that gateway was; else none (gateway.port).
func servicePort(cmd *cobra.Command, flag int, stateDir string) (port, from string) {
	if cmd.Flags().Changed("port") {
		return strconv.Itoa(flag), ""
	}
	rec, ok, err := statedir.Running(stateDir)
	if err != nil || !ok || len(rec.Addrs) == 0 {
		return "", ""
	}
	_, p, err := net.SplitHostPort(rec.Addrs[0])
	if err != nil || p == strconv.Itoa(settings.DefaultGatewayPort) {
		return "", ""
	}
	return p, "as the gateway running from " + stateDir + " (pid " + strconv.Itoa(rec.PID) + ") does"
}

func newServiceCmd(opts Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "service",
		Short: "Keep the gateway running: install, uninstall or inspect a systemd user unit (launchd agent on macOS)",
	}
	var noStart bool
	var configPath, svcBind string
	var svcPort int
	install := &cobra.Command{
		Use:   "install",
		Short: "Write the service definition for `switchboard serve` and start it (restarts on failure)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := pickServiceManager(opts.Env)
			if err != nil {
				return err
			}
			executable := opts.Executable
			if executable == nil {
				executable = os.Executable
			}
			exe, err := executable()
			if err != nil {
				return fmt.Errorf("service: cannot find this binary: %w", err)
			}
			if strings.Contains(exe, string(filepath.Separator)+"go-build") {
				return errors.New("service: this binary was built by `go run` into a temporary directory; build it first (go build -o ~/.local/bin/switchboard ./cmd/switchboard) and run `switchboard service install` from there")
			}
			if exe, err = filepath.EvalSymlinks(exe); err != nil {
				return fmt.Errorf("service: %w", err)
			}
			paths, err := settings.ResolvePaths(opts.Env)
			if err != nil {
				return err
			}
			spec := serviceSpec{Exe: exe, Args: []string{"serve"}, Env: map[string]string{settings.EnvStateDir: paths.StateDir}, LogDir: paths.StateDir, WorkDir: paths.StateDir}
			cfgFile := paths.ConfigPath
			if configPath != "" {
				abs, err := filepath.Abs(configPath)
				if err != nil {
					return fmt.Errorf("service: %w", err)
				}
				spec.Args = append(spec.Args, "--config", abs)
				cfgFile = abs
			} else if v := strings.TrimSpace(opts.Env(settings.EnvConfig)); v != "" {
				spec.Env[settings.EnvConfig] = v
			}
			port, from := servicePort(cmd, svcPort, paths.StateDir)
			if port != "" {
				spec.Args = append(spec.Args, "--port", port)
			}
			if svcBind != "" {
				spec.Args = append(spec.Args, "--bind", svcBind)
			}
			if err := os.MkdirAll(paths.StateDir, 0o700); err != nil {
				return fmt.Errorf("service: state dir: %w", err)
			}
			if err := os.MkdirAll(filepath.Dir(m.path), 0o755); err != nil {
				return fmt.Errorf("service: %w", err)
			}
			out := cmd.OutOrStdout()
			vars := serviceEnvVars(opts.Env, cfgFile)
			if m.name == "systemd" {
				spec.EnvFile = filepath.Join(paths.StateDir, serviceEnvFile)
				written, skipped, err := writeServiceEnv(spec.EnvFile, vars)
				if err != nil {
					return fmt.Errorf("service: %w", err)
				}
				if len(written) > 0 {
					fmt.Fprintf(out, "the service reads %s from %s (copied from this shell, mode 0600)\n", strings.Join(written, ", "), spec.EnvFile)
				}
				if len(skipped) > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "switchboard: not copied (a value of several lines): %s; write them in the config\n", strings.Join(skipped, ", "))
				}
			} else if len(vars) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "switchboard: the service does not see this shell's %s; write them in the config\n", strings.Join(sortedEnvKeys(vars), ", "))
			}
			if err := writeFileAtomic(m.path, []byte(m.text(spec)), 0o644); err != nil {
				return fmt.Errorf("service: %w", err)
			}
			fmt.Fprintf(out, "wrote %s (%s)\n", m.path, m.name)
			if from != "" {
				fmt.Fprintf(out, "the service serves on port %s, %s\n", port, from)
			}
			startCmd := strings.Join(m.install[len(m.install)-1], " ")
			if noStart {
				fmt.Fprintf(out, "not started (--no-start); start it with: %s\n", startCmd)
				return nil
			}
			if rec, ok := foregroundGateway(cmd.Context(), m, paths.StateDir); ok {
				return fmt.Errorf("service: the definition is written, but not started: a gateway started by hand is running on this state dir (pid %d, %s), and the service's serve could not start beside it (one gateway per state dir); stop it (Ctrl-C where it runs, or kill %d), then start the service: %s",
					rec.PID, rec.URL, rec.PID, startCmd)
			}
			if err := runAll(cmd.Context(), m.install, out, cmd.ErrOrStderr()); err != nil {
				return fmt.Errorf("service: the definition is written, but starting it failed: %w", err)
			}
			fmt.Fprintln(out, "started; `switchboard service status` shows it, `switchboard status` talks to it")
			return nil
		},
	}
	install.Flags().BoolVar(&noStart, "no-start", false, "only write the definition; do not enable or start it")
	install.Flags().StringVar(&configPath, "config", "", "config file the service's serve uses")
	install.Flags().IntVar(&svcPort, "port", 0, "port the service's serve listens on (default: the port of the gateway running from this state dir, else gateway.port)")
	install.Flags().StringVar(&svcBind, "bind", "", `the service's serve --bind ("loopback", "lan" or an IP address)`)

	uninstall := &cobra.Command{
		Use:   "uninstall",
		Short: "Stop the service and remove its definition",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := pickServiceManager(opts.Env)
			if err != nil {
				return err
			}
			if _, err := os.Stat(m.path); errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("service: not installed (no %s)", m.path)
			}
			var stopErr error
			if !noStart {
				stopErr = runAll(cmd.Context(), m.uninstall[:1], cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			if err := os.Remove(m.path); err != nil {
				return fmt.Errorf("service: %w", err)
			}
			if !noStart && len(m.uninstall) > 1 {
				stopErr = errors.Join(stopErr, runAll(cmd.Context(), m.uninstall[1:], cmd.OutOrStdout(), cmd.ErrOrStderr()))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", m.path)
			if stopErr != nil {
				return fmt.Errorf("service: removed, but stopping it reported: %w", stopErr)
			}
			return nil
		},
	}
	uninstall.Flags().BoolVar(&noStart, "no-start", false, "only remove the definition; do not call the service manager")

	status := &cobra.Command{
		Use:   "status",
		Short: "Show whether the service is installed and what the service manager says of it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := pickServiceManager(opts.Env)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if _, err := os.Stat(m.path); errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(out, "not installed (%s: no %s); install with `switchboard service install`\n", m.name, m.path)
				return errors.New("service: not installed")
			}
			fmt.Fprintf(out, "installed: %s (%s)\n", m.path, m.name)
			return runAll(cmd.Context(), m.status, out, cmd.ErrOrStderr())
		},
	}
	cmd.AddCommand(install, uninstall, status)
	return cmd
}

// runAll runs each command in turn, streaming its output, and stops at the
// first failure.
func runAll(ctx context.Context, cmds [][]string, stdout, stderr io.Writer) error {
	for _, c := range cmds {
		var errBuf bytes.Buffer
		x := exec.CommandContext(ctx, c[0], c[1:]...)
		x.Stdout = stdout
		x.Stderr = io.MultiWriter(stderr, &errBuf)
		if err := x.Run(); err != nil {
			return fmt.Errorf("%s: %w%s", strings.Join(c, " "), err, managerHint(errBuf.String()))
		}
	}
	return nil
}

// managerHint says what to do when the service manager's own error is one
// a user cannot act on as it is: no systemd user session to talk to (a
// container, or a shell from su or sudo).
func managerHint(stderr string) string {
	if strings.Contains(stderr, "Failed to connect to bus") || strings.Contains(stderr, "DBUS_SESSION_BUS_ADDRESS") {
		return " (systemctl --user finds no user session here: log in as the user, and `loginctl enable-linger $USER` keeps the service running after logout; without systemd, run `switchboard serve` under the supervisor you have)"
	}
	return ""
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it into place.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Chmod(mode), f.Close()); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
