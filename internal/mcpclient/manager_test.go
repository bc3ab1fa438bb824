package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/interop"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// envHelperServer makes the test binary serve MCP on stdio (see
// TestMain): tools "ping" and "crash" (the process exits mid-call).
const envHelperServer = "SWITCHBOARD_MCPCLIENT_HELPER_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(envHelperServer) == "1" {
		helperServer()
		return
	}
	os.Exit(m.Run())
}

func helperServer() {
	s := sdk.NewServer(&sdk.Implementation{Name: "helper", Version: "1"}, nil)
	schema := map[string]any{"type": "object"}
	s.AddTool(&sdk.Tool{Name: "ping", Description: "answers pong", InputSchema: schema},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("pong from %d", os.Getpid())}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "crash", Description: "exits mid-call", InputSchema: schema},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			os.Exit(3)
			return nil, nil
		})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		os.Exit(1)
	}
}

func stdioServer(name string, argv []string, env map[string]string) config.MCPServerSettings {
	return config.MCPServerSettings{
		Name: name, Command: argv[0], Args: argv[1:], Env: env, Transport: "stdio", Enabled: true,
		RequestTimeout: 30 * time.Second, ConnectionTimeout: 30 * time.Second,
	}
}

func helperSettings(t testing.TB, name string) config.MCPServerSettings {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return stdioServer(name, []string{exe, "-test.run=^$"}, map[string]string{envHelperServer: "1"})
}

func find(ts []tools.Tool, name string) tools.Tool {
	for _, t := range ts {
		if t.Name() == name {
			return t
		}
	}
	return nil
}

func call(t *testing.T, ts []tools.Tool, name string, args any) (*tools.Result, error) {
	t.Helper()
	tool := find(ts, name)
	if tool == nil {
		var names []string
		for _, x := range ts {
			names = append(names, x.Name())
		}
		t.Fatalf("no tool %s in %v", name, names)
	}
	b, _ := json.Marshal(args)
	return tool.Call(context.Background(), b)
}

// alive reports whether a process with pid exists (and is not a zombie of
// ours: those are reaped by Close).
func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

func TestLazyStartAndShutdownStopsServers(t *testing.T) {
	var servers []config.MCPServerSettings
	for i := range 10 {
		servers = append(servers, helperSettings(t, fmt.Sprintf("h%d", i)))
	}
	m := New(Config{Servers: servers})
	for _, st := range m.Status() {
		if st.State != StateIdle || st.PID != 0 {
			t.Fatalf("before any run: %+v, want idle with no process", st)
		}
	}
	start := time.Now()
	ts := m.Tools(context.Background())
	t.Logf("started 10 stdio servers in %v", time.Since(start))
	if len(ts) != 20 {
		t.Fatalf("tools = %d, want 20", len(ts))
	}
	var pids []int
	for _, st := range m.Status() {
		if st.State != StateReady || st.PID == 0 || !slices.Equal(st.Tools, []string{"crash", "ping"}) {
			t.Errorf("after Tools: %+v", st)
		}
		pids = append(pids, st.PID)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("server process %d outlived Close", pid)
		}
	}
	for _, st := range m.Status() {
		if st.State != StateStopped {
			t.Errorf("after Close: %+v", st)
		}
	}
	if m.Close() == nil {
		t.Error("second Close returned nil")
	}
}

func TestCrashMidCallIsAToolErrorAndRestarts(t *testing.T) {
	m := New(Config{Servers: []config.MCPServerSettings{helperSettings(t, "helper")},
		Backoff: func(int) time.Duration { return 50 * time.Millisecond }})
	defer m.Close()
	ts := m.Tools(context.Background())
	first := m.Status()[0].PID
	_, err := call(t, ts, "helper__crash", map[string]any{})
	if err == nil || !strings.Contains(err.Error(), `MCP server "helper" exited during the call to crash`) {
		t.Fatalf("crash call err = %v, want a clear tool error", err)
	}
	// The next call waits for the restart and reaches a new process.
	res, err := call(t, ts, "helper__ping", map[string]any{})
	if err != nil {
		t.Fatalf("ping after crash: %v", err)
	}
	st := m.Status()[0]
	if st.Restarts != 1 || st.PID == first || st.PID == 0 || !strings.Contains(res.Text, fmt.Sprint(st.PID)) {
		t.Errorf("after restart: %+v, ping %q (first pid %d)", st, res.Text, first)
	}
	if alive(first) {
		t.Errorf("crashed process %d was not reaped", first)
	}
}

func TestFailingServerIsLeftOutAndRetried(t *testing.T) {
	m := New(Config{Servers: []config.MCPServerSettings{
		stdioServer("broken", []string{filepath.Join(t.TempDir(), "no-such-binary")}, nil),
		helperSettings(t, "ok"),
	}, Backoff: func(int) time.Duration { return time.Hour }})
	defer m.Close()
	ts := m.Tools(context.Background())
	if len(ts) != 2 || find(ts, "ok__ping") == nil {
		t.Fatalf("tools = %d, want the working server's 2", len(ts))
	}
	st := m.Status()[0]
	if st.State != StateFailed || !strings.Contains(st.LastError, "no-such-binary") {
		t.Errorf("broken server status = %+v", st)
	}
}

func TestDisabledServer(t *testing.T) {
	s := helperSettings(t, "off")
	s.Enabled = false
	m := New(Config{Servers: []config.MCPServerSettings{s}})
	defer m.Close()
	if ts := m.Tools(context.Background()); len(ts) != 0 {
		t.Errorf("disabled server offered %d tools", len(ts))
	}
	if st := m.Status()[0]; st.State != StateDisabled || st.PID != 0 {
		t.Errorf("status = %+v", st)
	}
}

func TestToolFilter(t *testing.T) {
	s := helperSettings(t, "f")
	s.IncludeTools = []string{"p*", "crash"}
	s.ExcludeTools = []string{"crash"}
	m := New(Config{Servers: []config.MCPServerSettings{s}})
	defer m.Close()
	ts := m.Tools(context.Background())
	if len(ts) != 1 || ts[0].Name() != "f__ping" {
		t.Errorf("filtered tools = %v", ts)
	}
}

// The reference server-everything, over stdio: content types, structured
// content, errors, and a tools/list_changed after initialization.
func TestEverythingServer(t *testing.T) {
	m := New(Config{Servers: []config.MCPServerSettings{stdioServer("everything", interop.MCPServerCommand(t, "everything"), nil)}})
	defer m.Close()
	ts := m.Tools(context.Background())
	res, err := call(t, ts, "everything__echo", map[string]any{"message": "hi"})
	if err != nil || res.Text != "Echo: hi" || res.IsError {
		t.Errorf("echo = %+v, %v", res, err)
	}
	res, err = call(t, ts, "everything__get-tiny-image", map[string]any{})
	if err != nil || !slices.ContainsFunc(res.Blocks, func(b tools.Block) bool {
		return b.Type == "image" && b.MimeType == "image/png" && len(b.Data) > 20
	}) {
		t.Errorf("get-tiny-image = %+v, %v", res, err)
	}
	res, err = call(t, ts, "everything__get-structured-content", map[string]any{"location": "Chicago"})
	det, _ := json.Marshal(res.Details)
	if err != nil || !strings.HasPrefix(res.Text, "structuredContent:\n") || !strings.Contains(string(det), `"structuredContent":{"conditions":"Light rain / drizzle"`) {
		t.Errorf("get-structured-content = %q %s, %v", res.Text, det, err)
	}
	res, err = call(t, ts, "everything__get-sum", map[string]any{"a": "x"})
	if err != nil || !res.IsError {
		t.Errorf("get-sum with a bad argument = %+v, %v; want an MCP error result", res, err)
	}
	// Tools registered after initialization arrive through list_changed.
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(m.Status()[0].Tools, "simulate-research-query") {
		if time.Now().After(deadline) {
			t.Fatalf("tools after list_changed: %v", m.Status()[0].Tools)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The reference server-filesystem, confined to a temp dir.
func TestFilesystemServer(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte("inside the sandbox"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := New(Config{Servers: []config.MCPServerSettings{stdioServer("fs", interop.MCPServerCommand(t, "filesystem", dir), nil)}})
	defer m.Close()
	ts := m.Tools(context.Background())
	res, err := call(t, ts, "fs__read_text_file", map[string]any{"path": filepath.Join(dir, "note.txt")})
	if err != nil || !strings.Contains(res.Text, "inside the sandbox") {
		t.Errorf("read inside = %+v, %v", res, err)
	}
	res, err = call(t, ts, "fs__read_text_file", map[string]any{"path": outside})
	if err != nil || !res.IsError || strings.Contains(res.Text, "outside\n") || !strings.Contains(res.Text, "denied") {
		t.Errorf("read outside = %+v, %v; want an access-denied error result", res, err)
	}
}

func TestCallAfterCloseIsAnError(t *testing.T) {
	m := New(Config{Servers: []config.MCPServerSettings{helperSettings(t, "h")}})
	ts := m.Tools(context.Background())
	m.Close()
	_, err := call(t, ts, "h__ping", map[string]any{})
	if err == nil || !errors.Is(err, err) || !strings.Contains(err.Error(), "not available") {
		t.Errorf("call after Close: %v", err)
	}
}

// startRemoteEverything runs server-everything in an HTTP mode on a free
// loopback port and returns its base URL.
func startRemoteEverything(t *testing.T, mode string) string {
	t.Helper()
	argv := interop.MCPServerCommand(t, "everything")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(argv[0], argv[1], mode)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			return base
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything %s did not listen on %d", mode, port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRemoteServers(t *testing.T) {
	for _, tc := range []struct{ mode, transport, path string }{
		{"streamableHttp", "streamable-http", "/mcp"},
		{"sse", "sse", "/sse"},
	} {
		t.Run(tc.transport, func(t *testing.T) {
			base := startRemoteEverything(t, tc.mode)
			m := New(Config{Servers: []config.MCPServerSettings{{
				Name: "remote", URL: base + tc.path, Transport: tc.transport, Enabled: true,
				Headers:        map[string]string{"X-Test": "1"},
				RequestTimeout: 30 * time.Second, ConnectionTimeout: 30 * time.Second,
			}}})
			defer m.Close()
			ts := m.Tools(context.Background())
			res, err := call(t, ts, "remote__echo", map[string]any{"message": "over " + tc.transport})
			if err != nil || res.Text != "Echo: over "+tc.transport {
				t.Errorf("echo = %+v, %v (status %+v)", res, err, m.Status())
			}
		})
	}
}

// A stdio server gets its configured env and a few harmless variables,
// never the gateway's secrets.
func TestStdioServerEnvironment(t *testing.T) {
	t.Setenv("SWITCHBOARD_GATEWAY_TOKEN", "gateway-secret")
	t.Setenv("OPENAI_API_KEY", "sk-secret")
	s := stdioServer("everything", interop.MCPServerCommand(t, "everything"), map[string]string{"DOCS_KEY": "given"})
	m := New(Config{Servers: []config.MCPServerSettings{s}})
	defer m.Close()
	res, err := call(t, m.Tools(context.Background()), "everything__get-env", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]string
	if err := json.Unmarshal([]byte(res.Text), &env); err != nil {
		t.Fatalf("get-env = %q: %v", res.Text, err)
	}
	if env["DOCS_KEY"] != "given" || env["PATH"] == "" {
		t.Errorf("configured or inherited variables missing: %v", env)
	}
	for _, k := range []string{"SWITCHBOARD_GATEWAY_TOKEN", "OPENAI_API_KEY"} {
		if _, ok := env[k]; ok {
			t.Errorf("the server was given %s", k)
		}
	}
}

func TestStatusRedactsURLCredentials(t *testing.T) {
	m := New(Config{Servers: []config.MCPServerSettings{{
		Name: "r", URL: "https://user:pw@example.com/mcp?key=secret", Transport: "streamable-http", Enabled: false,
	}}})
	defer m.Close()
	if got := m.Status()[0].Target; strings.Contains(got, "pw") || strings.Contains(got, "secret") {
		t.Errorf("target = %q", got)
	}
}
