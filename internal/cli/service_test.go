package cli

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/statedir"
)

func TestSystemdUnitText(t *testing.T) {
	u := systemdUnitText(serviceSpec{
		Exe:     "/opt/sb dir/switchboard",
		Args:    []string{"serve", "--config", `/etc/a"b%c.json5`},
		Env:     map[string]string{"SWITCHBOARD_STATE_DIR": "/home/u/.switchboard", "A": "1"},
		WorkDir: "/home/u/.switchboard",
	})
	for _, want := range []string{
		"[Unit]\n", "[Service]\n", "[Install]\nWantedBy=default.target\n",
		`ExecStart="/opt/sb dir/switchboard" "serve" "--config" "/etc/a\"b%%c.json5"` + "\n",
		"Environment=\"A=1\"\nEnvironment=\"SWITCHBOARD_STATE_DIR=/home/u/.switchboard\"\n",
		"Restart=on-failure\n",
		"WorkingDirectory=\"/home/u/.switchboard\"\n",
	} {
		if !strings.Contains(u, want) {
			t.Errorf("unit lacks %q:\n%s", want, u)
		}
	}
}

func TestLaunchdPlistIsXML(t *testing.T) {
	p := launchdPlistText(serviceSpec{Exe: "/usr/local/bin/switchboard", Args: []string{"serve", "--config", "/a&b<c>.json5"}, Env: map[string]string{"SWITCHBOARD_STATE_DIR": "/Users/u/.switchboard"}, LogDir: "/Users/u/.switchboard"})
	dec := xml.NewDecoder(strings.NewReader(p))
	dec.Strict = true
	var strs []string
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if cd, ok := tok.(xml.CharData); ok && strings.TrimSpace(string(cd)) != "" {
			strs = append(strs, string(cd))
		}
	}
	joined := strings.Join(strs, "|")
	for _, want := range []string{launchdLabel, "/usr/local/bin/switchboard|serve|--config|/a&b<c>.json5", "SWITCHBOARD_STATE_DIR|/Users/u/.switchboard", "RunAtLoad"} {
		if !strings.Contains(joined, want) {
			t.Errorf("plist text %q lacks %q", joined, want)
		}
	}
}

// install writes the unit where systemd looks for user units and calls
// systemctl (here a recording stand-in on PATH); uninstall reverses it.
func TestServiceInstallUninstall(t *testing.T) {
	home := t.TempDir()
	bin := t.TempDir()
	log := filepath.Join(t.TempDir(), "calls")
	script := "#!/bin/sh\necho \"$*\" >> " + log + "\n"
	if err := os.WriteFile(filepath.Join(bin, "systemctl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	env := map[string]string{"HOME": home, envSvcManager: "systemd", config.EnvStateDir: filepath.Join(home, "state")}

	r := runCLI(t, env, "service", "status")
	if r.err == nil || !strings.Contains(r.stdout, "not installed") {
		t.Fatalf("status before install: %v %q", r.err, r.stdout)
	}
	exe := filepath.Join(bin, "switchboard")
	if err := os.WriteFile(exe, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	exe, _ = filepath.EvalSymlinks(exe)
	opts := Options{Env: config.MapEnv(env), Executable: func() (string, error) { return exe, nil }}
	if r := runWith(t, opts, "service", "install"); r.err != nil {
		t.Fatalf("install: %v\n%s", r.err, r.stderr)
	}
	unit := filepath.Join(home, ".config", "systemd", "user", systemdUnit)
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `ExecStart="`+exe+`" "serve"`) || !strings.Contains(string(b), "SWITCHBOARD_STATE_DIR="+filepath.Join(home, "state")) {
		t.Errorf("unit:\n%s", b)
	}
	if fi, err := os.Stat(filepath.Join(home, "state")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state dir not created 0700: %v", err)
	}
	if r := runCLI(t, env, "service", "status"); r.err != nil || !strings.Contains(r.stdout, "installed: "+unit) {
		t.Errorf("status after install: %v %q", r.err, r.stdout)
	}
	if r := runCLI(t, env, "service", "uninstall"); r.err != nil {
		t.Fatalf("uninstall: %v", r.err)
	}
	if _, err := os.Stat(unit); !os.IsNotExist(err) {
		t.Errorf("unit still there: %v", err)
	}
	calls, _ := os.ReadFile(log)
	want := "--user daemon-reload\n--user enable --now switchboard.service\n--user status --no-pager switchboard.service\n--user disable --now switchboard.service\n--user daemon-reload\n"
	if string(calls) != want {
		t.Errorf("systemctl calls:\n%s\nwant:\n%s", calls, want)
	}
	if r := runCLI(t, env, "service", "uninstall"); r.err == nil || !strings.Contains(r.errText(), "not installed") {
		t.Errorf("second uninstall: %v", r.err)
	}
}

func TestServiceInstallRefusesGoRunBinary(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home, envSvcManager: "systemd"}
	opts := Options{Env: config.MapEnv(env), Executable: func() (string, error) {
		return filepath.Join(home, "go-build123", "b001", "exe", "switchboard"), nil
	}}
	r := runWith(t, opts, "service", "install", "--no-start")
	if r.err == nil || !strings.Contains(r.errText(), "go run") {
		t.Fatalf("install from a go run binary: %v", r.err)
	}
	if _, err := os.Stat(filepath.Join(home, ".config")); !os.IsNotExist(err) {
		t.Errorf("something was written: %v", err)
	}
}

// service install keeps the port the gateway runs on: --port when given,
// else the port of the gateway running from the state dir (started with
// serve --port), so that the service comes back where it was.
func TestServiceInstallKeepsPort(t *testing.T) {
	home := t.TempDir()
	state := filepath.Join(home, "state")
	env := map[string]string{"HOME": home, envSvcManager: "systemd", config.EnvStateDir: state, config.EnvConfig: "/etc/sb.json5"}
	exe := filepath.Join(t.TempDir(), "switchboard")
	if err := os.WriteFile(exe, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	exe, _ = filepath.EvalSymlinks(exe)
	opts := Options{Env: config.MapEnv(env), Executable: func() (string, error) { return exe, nil }}
	unit := filepath.Join(home, ".config", "systemd", "user", systemdUnit)
	install := func(args ...string) string {
		t.Helper()
		if r := runWith(t, opts, append([]string{"service", "install", "--no-start"}, args...)...); r.err != nil {
			t.Fatalf("install %v: %v", args, r.err)
		}
		b, err := os.ReadFile(unit)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if u := install(); !strings.Contains(u, `"serve"`+"\n") || !strings.Contains(u, "SWITCHBOARD_CONFIG=/etc/sb.json5") {
		t.Errorf("no gateway running, no --port: unit\n%s", u)
	}
	if u := install("--port", "30002", "--bind", "lan"); !strings.Contains(u, `"serve" "--port" "30002" "--bind" "lan"`) {
		t.Errorf("--port 30002 --bind lan: unit\n%s", u)
	}
	lock, err := statedir.Acquire(state)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := lock.Write(statedir.Record{PID: os.Getpid(), URL: "ws://127.0.0.1:30001", Addrs: []string{"127.0.0.1:30001"}}); err != nil {
		t.Fatal(err)
	}
	if u := install(); !strings.Contains(u, `"serve" "--port" "30001"`) || !strings.Contains(u, "SWITCHBOARD_STATE_DIR="+state) {
		t.Errorf("gateway running on 30001: unit\n%s", u)
	}
}

// fakeSystemctl puts a systemctl on PATH that appends its arguments to the
// returned log and runs body (sh) after that.
func fakeSystemctl(t *testing.T, body string) (log string) {
	t.Helper()
	bin := t.TempDir()
	log = filepath.Join(t.TempDir(), "calls")
	script := "#!/bin/sh\necho \"$*\" >> " + log + "\n" + body + "\n"
	if err := os.WriteFile(filepath.Join(bin, "systemctl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return log
}

func serviceTestOpts(t *testing.T, env map[string]string) Options {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "switchboard")
	if err := os.WriteFile(exe, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	exe, _ = filepath.EvalSymlinks(exe)
	return Options{Env: config.MapEnv(env), Executable: func() (string, error) { return exe, nil }}
}

// A gateway started by hand holds the state dir: the service's serve
// would fail at each restart until systemd gave up, so install writes the
// unit, does not start it, and says what to stop and how to start it. A
// gateway that is the service's own process (a reinstall) is no obstacle.
func TestServiceInstallBesideAForegroundGateway(t *testing.T) {
	home := t.TempDir()
	state := filepath.Join(home, "state")
	pidFile := filepath.Join(t.TempDir(), "mainpid")
	log := fakeSystemctl(t, `case "$*" in *show*) cat `+pidFile+`;; esac`)
	env := map[string]string{"HOME": home, envSvcManager: "systemd", config.EnvStateDir: state}
	opts := serviceTestOpts(t, env)
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	lock, err := statedir.Acquire(state)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := lock.Write(statedir.Record{PID: os.Getpid(), URL: "ws://127.0.0.1:18789", Addrs: []string{"127.0.0.1:18789"}}); err != nil {
		t.Fatal(err)
	}

	os.WriteFile(pidFile, []byte("0\n"), 0o600)
	r := runWith(t, opts, "service", "install")
	pid := strconv.Itoa(os.Getpid())
	for _, want := range []string{"not started", "pid " + pid, "Ctrl-C", "kill " + pid, "systemctl --user enable --now switchboard.service"} {
		if r.err == nil || !strings.Contains(r.errText(), want) {
			t.Errorf("install beside a foreground gateway: %v, want it to say %q", r.err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".config", "systemd", "user", systemdUnit)); err != nil {
		t.Errorf("unit not written: %v", err)
	}
	if calls, _ := os.ReadFile(log); strings.Contains(string(calls), "enable") {
		t.Errorf("the service was started:\n%s", calls)
	}

	os.WriteFile(pidFile, []byte(pid+"\n"), 0o600)
	if r := runWith(t, opts, "service", "install"); r.err != nil {
		t.Fatalf("reinstall over the running service: %v", r.err)
	}
	if calls, _ := os.ReadFile(log); !strings.Contains(string(calls), "--user enable --now switchboard.service") {
		t.Errorf("the reinstall did not enable the service:\n%s", calls)
	}
}

// Without a systemd user session, systemctl's own "Failed to connect to
// bus" gets the fix beside it.
func TestServiceInstallWithoutUserSession(t *testing.T) {
	home := t.TempDir()
	fakeSystemctl(t, "echo 'Failed to connect to bus: No medium found' >&2; exit 1")
	env := map[string]string{"HOME": home, envSvcManager: "systemd", config.EnvStateDir: filepath.Join(home, "state")}
	r := runWith(t, serviceTestOpts(t, env), "service", "install")
	for _, want := range []string{"definition is written", "loginctl enable-linger", "switchboard serve"} {
		if r.err == nil || !strings.Contains(r.errText(), want) {
			t.Errorf("install without a user session: %v, want it to say %q", r.err, want)
		}
	}
}

func TestLaunchdPID(t *testing.T) {
	for out, want := range map[string]int{
		"{\n\t\"LimitLoadToSessionType\" = \"Aqua\";\n\t\"Label\" = \"dev.switchboard.gateway\";\n\t\"PID\" = 4242;\n};\n": 4242,
		"{\n\t\"Label\" = \"dev.switchboard.gateway\";\n\t\"LastExitStatus\" = 0;\n};\n":                                   0,
		"": 0,
	} {
		if got := launchdPID(out); got != want {
			t.Errorf("launchdPID(%q) = %d, want %d", out, got, want)
		}
	}
}

// A service does not inherit the installing shell's environment: the
// variables the gateway reads (an API key, the config's "${NAME}"
// references) are copied into <state dir>/service.env (0600), which the
// unit reads; the unit itself holds no secret. Lines of variables this
// shell does not set are kept.
func TestServiceInstallCarriesTheShellsVariables(t *testing.T) {
	home := t.TempDir()
	state := filepath.Join(home, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "switchboard.json5"), []byte(`{gateway: {auth: {mode: "token", token: "${MY_GW_TOKEN}"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	envFile := filepath.Join(state, serviceEnvFile)
	if err := os.WriteFile(envFile, []byte("KEPT=\"1\"\nOPENAI_API_KEY=\"old\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home, envSvcManager: "systemd", config.EnvStateDir: state,
		"OPENAI_API_KEY": `sk-"x"\y$z`, "MY_GW_TOKEN": "gw-secret", "UNRELATED": "1", "SWITCHBOARD_SHUTDOWN_GRACE": "30s"}
	r := runWith(t, serviceTestOpts(t, env), "service", "install", "--no-start")
	if r.err != nil {
		t.Fatalf("install: %v", r.err)
	}
	if want := "the service reads MY_GW_TOKEN, OPENAI_API_KEY, SWITCHBOARD_SHUTDOWN_GRACE from " + envFile; !strings.Contains(r.stdout, want) {
		t.Errorf("stdout = %q, want %q", r.stdout, want)
	}
	b, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	if want := "KEPT=\"1\"\nMY_GW_TOKEN=\"gw-secret\"\nOPENAI_API_KEY=\"sk-\\\"x\\\"\\\\y\\$z\"\nSWITCHBOARD_SHUTDOWN_GRACE=\"30s\"\n"; string(b) != want {
		t.Errorf("%s:\n%s\nwant:\n%s", envFile, b, want)
	}
	if fi, err := os.Stat(envFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s mode: %v %v", envFile, fi.Mode(), err)
	}
	unit, err := os.ReadFile(filepath.Join(home, ".config", "systemd", "user", systemdUnit))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "EnvironmentFile=-"+envFile+"\n") {
		t.Errorf("unit does not read %s:\n%s", envFile, unit)
	}
	if strings.Contains(string(unit), "gw-secret") || strings.Contains(string(unit), "sk-") {
		t.Errorf("unit holds a secret:\n%s", unit)
	}
}

// TestWriteServiceEnvKeepsWhatItCannotWrite: a variable whose value in
// this shell has several lines cannot be written to the env file; the
// line it had there stays (dropping it would take the service's key
// away), and it is reported as not copied.
func TestWriteServiceEnvKeepsWhatItCannotWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), serviceEnvFile)
	if err := os.WriteFile(path, []byte("MULTI=\"one line\"\nOTHER=\"x\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	written, skipped, err := writeServiceEnv(path, map[string]string{"MULTI": "a\nb", "NEW": "v"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(written, []string{"NEW"}) || !slices.Equal(skipped, []string{"MULTI"}) {
		t.Errorf("written %v, skipped %v", written, skipped)
	}
	b, _ := os.ReadFile(path)
	if want := "MULTI=\"one line\"\nOTHER=\"x\"\nNEW=\"v\"\n"; string(b) != want {
		t.Errorf("%s:\n%s\nwant:\n%s", path, b, want)
	}
}
