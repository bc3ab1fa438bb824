package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/interop"
	"github.com/switchboardhq/switchboard/internal/mcp"
)

// stdioMCP runs `switchboard mcp args...` in-process on pipes and connects
// a go-sdk client to it.
func stdioMCP(t *testing.T, g *gateway, opts *sdk.ClientOptions, args ...string) *sdk.ClientSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := Run(ctx, append([]string{"--url", g.url, "mcp"}, args...), Options{
			Env: g.env(), Stdin: inR, Stdout: outW, Stderr: io.Discard,
		})
		outW.CloseWithError(io.EOF)
		done <- err
	}()
	c := sdk.NewClient(&sdk.Implementation{Name: "stdio-test", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		cancel()
		t.Fatalf("connect over stdio: %v (cli: %v)", err, <-done)
	}
	t.Cleanup(func() {
		cs.Close()
		inW.Close()
		cancel()
		select {
		case err := <-done:
			// Closing the client closes the pipe the server writes to: a
			// write racing that close is how a stdio server learns its
			// client left, not a failure.
			if err != nil && !errors.Is(err, io.ErrClosedPipe) && !strings.Contains(err.Error(), io.ErrClosedPipe.Error()) {
				t.Errorf("switchboard mcp: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("switchboard mcp did not exit when its stdin closed")
		}
	})
	return cs
}

func toolJSON(t *testing.T, cs *sdk.ClientSession, params *sdk.CallToolParams) map[string]any {
	t.Helper()
	res, err := cs.CallTool(context.Background(), params)
	if err != nil {
		t.Fatalf("%s: %v", params.Name, err)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &out); err != nil {
		t.Fatalf("%s: %v", params.Name, err)
	}
	return out
}

func TestMCPStdioThroughGateway(t *testing.T) {
	g := startGateway(t, "")
	var mu sync.Mutex
	var progress []float64
	updated := make(chan string, 8)
	cs := stdioMCP(t, g, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, r.Params.Progress)
			mu.Unlock()
		},
		// Never blocks: the transcript changes many times (the child's
		// run, the send's turn), and a handler that blocks stalls the
		// session's Close for ever (CI hung here for 20 minutes).
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
			select {
			case updated <- r.Params.URI:
			default:
			}
		},
	})
	ctx := context.Background()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range lt.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := slices.Sorted(slices.Values(mcp.ExposedTools)); !slices.Equal(names, want) {
		t.Fatalf("tools over stdio = %v, want %v", names, want)
	}
	if a := toolJSON(t, cs, &sdk.CallToolParams{Name: "agents_list", Arguments: map[string]any{}}); a["requester"] != "main" {
		t.Errorf("agents_list = %v", a)
	}
	spawn := toolJSON(t, cs, &sdk.CallToolParams{Name: "sessions_spawn", Arguments: map[string]any{"task": "/reply child here", "label": "kid"}})
	child, _ := spawn["childSessionKey"].(string)
	if spawn["status"] != "accepted" || child == "" {
		t.Fatalf("sessions_spawn = %v", spawn)
	}
	uri := mcp.HistoryURI(child)
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("subscribe %s: %v", uri, err)
	}
	params := &sdk.CallToolParams{Name: "sessions_send", Arguments: map[string]any{
		"sessionKey": child, "message": "/sleep 2500ms\n/reply pong", "timeoutSeconds": 15,
	}}
	params.SetProgressToken("p1")
	if out := toolJSON(t, cs, params); out["reply"] != "pong" {
		t.Errorf("sessions_send = %v", out)
	}
	mu.Lock()
	n := len(progress)
	mu.Unlock()
	if n < 1 {
		t.Error("no progress notification reached the stdio client")
	}
	select {
	case got := <-updated:
		if got != uri {
			t.Errorf("updated %s, want %s", got, uri)
		}
	case <-time.After(10 * time.Second):
		t.Error("no resources/updated over stdio")
	}
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rr.Contents[0].Text, "pong") {
		t.Errorf("transcript resource = %s", rr.Contents[0].Text)
	}
	lr, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(lr.Resources, func(r *sdk.Resource) bool { return r.URI == uri }) {
		t.Errorf("resources/list over stdio lacks %s", uri)
	}
}

func TestMCPStdioWrongToken(t *testing.T) {
	g := startGateway(t, "")
	r := runWith(t, Options{Env: config.MapEnv(map[string]string{config.EnvStateDir: g.dir})},
		"--url", g.url, "--token", "wrong", "mcp")
	if r.err == nil || !strings.Contains(r.err.Error(), "gateway's MCP endpoint") || !strings.Contains(r.err.Error(), "Unauthorized") {
		t.Errorf("err = %v, want a connect error naming the endpoint and 401", r.err)
	}
}

// `switchboard mcp` finds gateway.auth.token in the config file, as every
// CLI command does; when it finds no token, the MCP host's initialize
// fails with an error saying what is missing, which stderr says too.
func TestMCPStdioConfigToken(t *testing.T) {
	const token = "mcp-config-token-0123456789"
	g := startGateway(t, `{ gateway: { auth: { mode: "token", token: "`+token+`" } } }`)
	cs := stdioMCP(t, g, nil)
	if a := toolJSON(t, cs, &sdk.CallToolParams{Name: "agents_list", Arguments: map[string]any{}}); a["requester"] != "main" {
		t.Errorf("agents_list with the config's token = %v", a)
	}

	other := t.TempDir() // a state dir whose config has no token
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr strings.Builder
	done := make(chan error, 1)
	go func() {
		err := Run(context.Background(), []string{"--url", g.url, "mcp"}, Options{
			Env: config.MapEnv(map[string]string{config.EnvStateDir: other}), Stdin: inR, Stdout: outW, Stderr: &stderr,
		})
		outW.Close()
		done <- err
	}()
	c := sdk.NewClient(&sdk.Implementation{Name: "stdio-test", Version: "1"}, nil)
	_, err := c.Connect(context.Background(), &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	inW.Close()
	runErr := <-done
	want := "no gateway token: none given with --token or " + config.EnvGatewayToken + ", and no gateway.auth.token in " + other
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != mcp.CodeGatewayUnavailable || !strings.Contains(we.Message, want) || !strings.Contains(we.Message, "Unauthorized") {
		t.Errorf("initialize error = %v, want code %d naming %q", err, mcp.CodeGatewayUnavailable, want)
	}
	if runErr == nil || !strings.Contains(runErr.Error(), want) || !strings.Contains(stderr.String(), want) {
		t.Errorf("switchboard mcp = %v, stderr %q; want both to say %q", runErr, stderr.String(), want)
	}
	if strings.Contains(stderr.String()+fmt.Sprint(err, runErr), token) {
		t.Error("the token was printed")
	}
}

func TestMCPList(t *testing.T) {
	everything := interop.MCPServerCommand(t, "everything")
	args, _ := json.Marshal(everything[1:])
	g := startGateway(t, `{ mcp: { servers: {
  everything: { command: "`+everything[0]+`", args: `+string(args)+` },
  off: { command: "/nonexistent", enabled: false },
} } }`)
	out := g.mustRun("mcp", "list")
	for _, want := range []string{"NAME", "everything  idle", "off         disabled", "stdio"} {
		if !strings.Contains(out, want) {
			t.Errorf("mcp list before any run lacks %q:\n%s", want, out)
		}
	}
	g.mustRun("sessions", "send", "main", "/tool everything__echo {\"message\":\"x\"}\n/then ok", "--wait")
	out = g.mustRun("mcp", "list")
	if !strings.Contains(out, "everything  ready") || !strings.Contains(out, "echo") {
		t.Errorf("mcp list after a run:\n%s", out)
	}
	var res struct {
		Servers []struct {
			Name, State string
			Tools       []string
			PID         int
		}
	}
	if err := json.Unmarshal([]byte(g.mustRun("mcp", "list", "--json")), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Servers) != 2 || res.Servers[0].Name != "everything" || res.Servers[0].PID == 0 || !slices.Contains(res.Servers[0].Tools, "get-tiny-image") {
		t.Errorf("mcp list --json = %+v", res)
	}
}

// `switchboard mcp` outlives a gateway restart: the next call connects
// again.
func TestMCPStdioSurvivesGatewayRestart(t *testing.T) {
	dir := t.TempDir()
	startOn := func(port int) *daemon.Daemon {
		d, err := daemon.Start(context.Background(), daemon.Options{
			Env:  config.MapEnv(map[string]string{config.EnvStateDir: dir, "HOME": dir}),
			Port: &port, Stdout: io.Discard, Logger: slog.New(slog.DiscardHandler), ShutdownGrace: 200 * time.Millisecond,
		})
		if err != nil {
			t.Fatalf("daemon.Start: %v", err)
		}
		return d
	}
	d := startOn(0)
	port := d.Addrs[0].(*net.TCPAddr).Port
	g := &gateway{t: t, url: "ws://" + d.Addrs[0].String(), dir: dir}
	cs := stdioMCP(t, g, nil)
	call := func() map[string]any {
		return toolJSON(t, cs, &sdk.CallToolParams{Name: "agents_list", Arguments: map[string]any{}})
	}
	if a := call(); a["requester"] != "main" {
		t.Fatalf("agents_list = %v", a)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = startOn(port)
	defer d.Close()
	if a := call(); a["requester"] != "main" {
		t.Errorf("agents_list after the gateway restarted = %v", a)
	}
}

// A host that writes its requests and closes stdin at once (a script
// piping JSON-RPC lines into `switchboard mcp`) gets every answer before
// the server exits: the end of its input is not the end of its calls.
func TestMCPStdioAnswersCallsSentBeforeEOF(t *testing.T) {
	g := startGateway(t, "")
	g.mustRun("sessions", "send", "piped", "hello", "--wait") // the session the tool call sends to
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"sessions_send","arguments":{"sessionKey":"piped","message":"/reply piped","timeoutSeconds":30}}}`,
	}, "\n") + "\n"
	r := runWith(t, Options{Env: g.env(), Stdin: strings.NewReader(in)}, "--url", g.url, "mcp")
	if r.err != nil {
		t.Fatalf("switchboard mcp: %v\nstderr: %s", r.err, r.stderr)
	}
	answered := map[string]string{}
	for line := range strings.Lines(r.stdout) {
		var resp struct {
			ID     any             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &resp); err != nil {
			t.Fatalf("stdout line %q: %v", line, err)
		}
		answered[fmt.Sprint(resp.ID)] = string(resp.Result) + string(resp.Error)
	}
	for _, id := range []string{"1", "2", "three"} {
		if _, ok := answered[id]; !ok {
			t.Errorf("call %s got no answer; stdout:\n%s", id, r.stdout)
		}
	}
	if !strings.Contains(answered["three"], `"reply":"piped"`) {
		t.Errorf("sessions_send answered %s", answered["three"])
	}
}
