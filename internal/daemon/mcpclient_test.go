package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/interop"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// startMCPClientDaemon starts a gateway whose config lists the reference
// servers server-everything and server-filesystem (confined to fsDir);
// agent "ops" denies everything__* tools.
func startMCPClientDaemon(t *testing.T, fsDir string) (*Daemon, *fakellm.Server) {
	t.Helper()
	everything := interop.MCPServerCommand(t, "everything")
	fs := interop.MCPServerCommand(t, "filesystem", fsDir)
	llm := fakellm.Start(t, fakellm.Options{APIKey: "test-key"})
	dir := t.TempDir()
	argv := func(a []string) string { b, _ := json.Marshal(a[1:]); return string(b) }
	cfg := fmt.Sprintf(`{
  models: { mode: "replace", providers: { fake: { baseUrl: %q, apiKey: "test-key", api: "openai-completions", models: [{ id: "fake-1" }] } } },
  agents: { defaults: { model: { primary: "fake/fake-1" } }, list: [{ id: "main", default: true }, { id: "ops", tools: { deny: ["everything__*"] } }] },
  mcp: { servers: {
    everything: { command: %q, args: %s },
    fs: { command: %q, args: %s },
    off: { command: "/nonexistent", enabled: false },
  } },
}`, llm.URL(), everything[0], argv(everything), fs[0], argv(fs))
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir)
	t.Cleanup(func() { d.Close() })
	return d, llm
}

// runTurn runs one turn and returns the tool result messages it stored.
func runTurn(t *testing.T, d *Daemon, runID, key, agentID, msg string) []*transcript.Message {
	t.Helper()
	ctx := context.Background()
	if _, _, err := d.Runner.Submit(ctx, agent.Input{RunID: runID, SessionKey: key, AgentID: agentID, Message: msg}); err != nil {
		t.Fatal(err)
	}
	if _, done, err := d.Runner.Wait(ctx, runID, 60*time.Second); err != nil || !done {
		t.Fatalf("wait %s: done=%v err=%v", runID, done, err)
	}
	sess, err := d.Store.GetSession(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := d.Store.History(ctx, sess.SessionID, store.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*transcript.Message
	for _, m := range msgs {
		if m.RunID == runID && m.Role == transcript.RoleToolResult {
			out = append(out, m.Entry.Message)
		}
	}
	if len(out) == 0 {
		t.Fatalf("run %s stored no tool result", runID)
	}
	return out
}

func details(m *transcript.Message) map[string]any {
	var d map[string]any
	json.Unmarshal(m.Details, &d)
	return d
}

func TestMCPServersToolsInTranscript(t *testing.T) {
	fsDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(fsDir, "plan.txt"), []byte("ship the MCP client"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, llm := startMCPClientDaemon(t, fsDir)
	for _, st := range d.mcpc.Status() {
		if st.State != "idle" && st.State != "disabled" {
			t.Errorf("before the first run %s is %s: servers must start lazily", st.Name, st.State)
		}
	}

	res := runTurn(t, d, "echo", "agent:main:main", "main", `/tool everything__echo {"message":"hi from the model"}`+"\n/then done")
	if got := res[0].Content.Text(); got != "Echo: hi from the model" || res[0].ToolName != "everything__echo" {
		t.Errorf("echo result = %q (%s)", got, res[0].ToolName)
	}
	if det := details(res[0]); det["mcpServer"] != "everything" || det["mcpTool"] != "echo" {
		t.Errorf("echo details = %v", det)
	}
	// The model was offered both servers' tools, schemas as given.
	reqs := llm.Requests()
	var offered []string
	for _, td := range reqs[len(reqs)-1].Request.Tools {
		offered = append(offered, td.Name)
		if td.Name == "everything__echo" && !strings.Contains(string(td.Parameters), `"message"`) {
			t.Errorf("echo schema = %s", td.Parameters)
		}
	}
	for _, want := range []string{"everything__echo", "everything__get-tiny-image", "fs__read_text_file", "sessions_list"} {
		if !slices.Contains(offered, want) {
			t.Errorf("tools offered to the model lack %s: %v", want, offered)
		}
	}

	res = runTurn(t, d, "img", "agent:main:main", "main", "/tool everything__get-tiny-image {}\n/then seen")
	if !slices.ContainsFunc(res[0].Content.Blocks, func(b transcript.Block) bool {
		return b.Type == transcript.BlockImage && b.MimeType == "image/png" && b.Data != ""
	}) {
		b, _ := json.Marshal(res[0].Content)
		t.Errorf("image result content = %s", b)
	}

	res = runTurn(t, d, "fs", "agent:main:main", "main",
		fmt.Sprintf(`/tool fs__read_text_file {"path":%q}`, filepath.Join(fsDir, "plan.txt"))+"\n/then read")
	if !strings.Contains(res[0].Content.Text(), "ship the MCP client") {
		t.Errorf("fs result = %q", res[0].Content.Text())
	}
	res = runTurn(t, d, "fs-out", "agent:main:main", "main", `/tool fs__read_text_file {"path":"/etc/hostname"}`+"\n/then read")
	if res[0].IsError == nil || !*res[0].IsError || !strings.Contains(res[0].Content.Text(), "denied") {
		t.Errorf("read outside the allowed dir = %q (isError %v)", res[0].Content.Text(), res[0].IsError)
	}

	// ops denies everything__*: not offered, and a call is refused.
	res = runTurn(t, d, "ops", "agent:ops:main", "ops", `/tool everything__echo {"message":"x"}`+"\n/then done")
	if !strings.Contains(res[0].Content.Text(), "Tool everything__echo not found") {
		t.Errorf("denied tool result = %q", res[0].Content.Text())
	}
	reqs = llm.Requests()
	for _, td := range reqs[len(reqs)-1].Request.Tools {
		if strings.HasPrefix(td.Name, "everything__") {
			t.Errorf("ops was offered %s", td.Name)
		}
	}

	// No orphans: Close stops every server process.
	var pids []int
	for _, st := range d.mcpc.Status() {
		if st.Name != "off" && (st.State != "ready" || st.PID == 0) {
			t.Errorf("%s: %+v", st.Name, st)
		}
		if st.PID != 0 {
			pids = append(pids, st.PID)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("MCP server process %d outlived the gateway's Close", pid)
		}
	}
}

// A server that dies in the middle of a call gives the model a clear tool
// error, and is restarted.
func TestMCPServerCrashMidCall(t *testing.T) {
	d, _ := startMCPClientDaemon(t, t.TempDir())
	runTurn(t, d, "warm", "agent:main:main", "main", `/tool everything__echo {"message":"warm"}`+"\n/then ok")
	started := make(chan struct{}, 1)
	stop := d.Runner.Subscribe(func(ev agent.Event) {
		if ev.Stream == agent.StreamTool && ev.Phase == agent.PhaseStart && ev.Tool.Name == "everything__trigger-long-running-operation" {
			select {
			case started <- struct{}{}:
			default:
			}
		}
	})
	defer stop()
	var pid int
	for _, st := range d.mcpc.Status() {
		if st.Name == "everything" {
			pid = st.PID
		}
	}
	go func() {
		<-started
		time.Sleep(300 * time.Millisecond)
		syscall.Kill(pid, syscall.SIGKILL)
	}()
	res := runTurn(t, d, "crash", "agent:main:main", "main", `/tool everything__trigger-long-running-operation {"duration":20,"steps":4}`+"\n/then after")
	text := res[0].Content.Text()
	if res[0].IsError == nil || !*res[0].IsError || !strings.Contains(text, `MCP server \"everything\" exited during the call to trigger-long-running-operation`) {
		t.Errorf("crash result = %s", text)
	}
	res = runTurn(t, d, "again", "agent:main:main", "main", `/tool everything__echo {"message":"back"}`+"\n/then ok")
	if res[0].Content.Text() != "Echo: back" {
		t.Errorf("after restart = %q", res[0].Content.Text())
	}
	for _, st := range d.mcpc.Status() {
		if st.Name == "everything" && (st.Restarts != 1 || st.PID == pid) {
			t.Errorf("everything after the crash: %+v", st)
		}
	}
}

// Ten configured servers, each taking 30s to come up, do not delay the
// gateway: nothing starts before a run needs tools.
func TestMCPServersDoNotDelayReadiness(t *testing.T) {
	dir := t.TempDir()
	var servers []string
	for i := range 10 {
		servers = append(servers, fmt.Sprintf(`s%d: { command: "sh", args: ["-c", "sleep 30"] }`, i))
	}
	cfg := `{ mcp: { servers: { ` + strings.Join(servers, ", ") + ` } } }`
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d := startDaemon(t, dir)
	defer d.Close()
	resp, err := http.Get("http://" + d.Addrs[0].String() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	elapsed := time.Since(start)
	t.Logf("gateway ready %v after Start with 10 MCP servers configured", elapsed)
	if resp.StatusCode != http.StatusOK || elapsed > 5*time.Second {
		t.Errorf("readyz = %d after %v", resp.StatusCode, elapsed)
	}
	for _, st := range d.mcpc.Status() {
		if st.State != "idle" || st.PID != 0 {
			t.Errorf("%s started before any run: %+v", st.Name, st)
		}
	}
}
