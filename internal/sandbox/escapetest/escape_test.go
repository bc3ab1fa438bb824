package escapetest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const sandboxedAgent = `{ id: "main", default: true, sandbox: { mode: "all", workspaceAccess: "rw" } }`

// Every escape attempt is a sandboxed exec the fake model asks for; none
// may change the host outside the workspace or see the gateway's secrets.
func TestEscapes(t *testing.T) {
	requireBwrap(t)
	g := start(t, sandboxedAgent, `tools: { exec: { timeoutSeconds: 20 } },`)
	const key = "agent:main:main"
	ws := strings.TrimSpace(g.tool(t, key, "pwd", "exec", map[string]any{"command": "echo hi; pwd"}))
	if !strings.HasPrefix(ws, "hi\n") {
		t.Fatalf("pwd = %q", ws)
	}
	ws = strings.TrimPrefix(ws, "hi\n")
	if ws != filepath.Join(g.dir, "workspace") {
		t.Fatalf("sandboxed exec runs in %q, want the workspace under %s", ws, g.dir)
	}
	outside := filepath.Join(filepath.Dir(g.dir), "outside-"+filepath.Base(g.dir))
	if err := os.MkdirAll(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	// A symlink planted in the workspace pointing out.
	if err := os.Symlink(outside, filepath.Join(ws, "out-link")); err != nil {
		t.Fatal(err)
	}

	writes := []struct{ name, cmd, hostPath string }{
		{"absolute path", "echo x > " + outside + "/abs", filepath.Join(outside, "abs")},
		{"state dir", "echo x > " + g.dir + "/planted", filepath.Join(g.dir, "planted")},
		{"dotdot", "echo x > ../dotdot", filepath.Join(g.dir, "dotdot")},
		{"planted symlink", "echo x > out-link/via-link", filepath.Join(outside, "via-link")},
		{"proc self root", "echo x > /proc/self/root" + outside + "/proc-root", filepath.Join(outside, "proc-root")},
		{"proc 1 root", "echo x > /proc/1/root" + outside + "/proc1-root", filepath.Join(outside, "proc1-root")},
		{"new symlink", "ln -s " + outside + " l2; echo x > l2/new-link", filepath.Join(outside, "new-link")},
	}
	for i, w := range writes {
		got := g.tool(t, key, fmt.Sprintf("w%d", i), "exec", map[string]any{"command": w.cmd})
		if _, err := os.Stat(w.hostPath); err == nil {
			t.Errorf("%s: %s was written on the host (result %q)", w.name, w.hostPath, got)
		}
	}
	// Hard link to the gateway config: the file is not in the sandbox's view.
	got := g.tool(t, key, "hl", "exec", map[string]any{"command": "ln " + g.dir + "/switchboard.json5 hard; cat hard"})
	if strings.Contains(got, token) {
		t.Errorf("hard link read the token: %q", got)
	}
	// Reading the config, the state dir and the environment.
	got = g.tool(t, key, "rd", "exec", map[string]any{"command": "cat " + g.dir + "/switchboard.json5; ls -la " + g.dir +
		"; env; cat /proc/1/environ; cat /proc/*/cmdline | tr '\\0' ' '; grep -r " + token[:10] + " / 2>/dev/null | head -3"})
	if strings.Contains(got, token) || strings.Contains(got, "llm-key") {
		t.Errorf("sandbox read the gateway's secrets: %q", got)
	}
	// The gateway's own loopback port and another loopback listener.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	_, gwPort, _ := net.SplitHostPort(g.addr)
	_, otherPort, _ := net.SplitHostPort(ln.Addr().String())
	for _, port := range []string{gwPort, otherPort} {
		got = g.tool(t, key, "net"+port, "exec", map[string]any{"command": "bash -c 'echo > /dev/tcp/127.0.0.1/" + port + "' && echo CONNECTED || echo REFUSED"})
		if !strings.Contains(got, "REFUSED") || strings.Contains(got, "CONNECTED") {
			t.Errorf("loopback port %s reachable from the sandbox: %q", port, got)
		}
	}
	select {
	case <-accepted:
		t.Error("the loopback listener accepted a connection from the sandbox")
	default:
	}
	// Seeing or signalling the gateway process.
	got = g.tool(t, key, "kill", "exec", map[string]any{"command": fmt.Sprintf("kill -0 %d && echo VISIBLE || echo HIDDEN; kill -9 %d", g.pid, g.pid)})
	if !strings.Contains(got, "HIDDEN") {
		t.Errorf("gateway pid visible from the sandbox: %q", got)
	}
	// Surviving the timeout by setsid and a double fork.
	start := time.Now()
	got = g.tool(t, key, "fork", "exec", map[string]any{"timeoutSeconds": 1, "command": "(setsid sh -c 'sleep 2; echo x > late-setsid' &); " +
		"(sh -c '(sleep 2; echo x > late-fork) &' &); nohup sh -c 'sleep 2; echo x > late-nohup' >/dev/null 2>&1 & sleep 30"})
	if !strings.Contains(got, "Command timed out after 1 seconds.") {
		t.Errorf("timeout result = %q", got)
	}
	t.Logf("sandboxed timeout returned after %v", time.Since(start))
	time.Sleep(3 * time.Second)
	for _, f := range []string{"late-setsid", "late-fork", "late-nohup"} {
		if _, err := os.Stat(filepath.Join(ws, f)); err == nil {
			t.Errorf("%s: a process outlived the timeout", f)
		}
	}
	// A fork bomb is bounded by the process limit (the kernel exempts a
	// gateway running as root from RLIMIT_NPROC: there the PID namespace
	// and the timeout bound it) and the gateway survives.
	got = g.tool(t, key, "bomb", "exec", map[string]any{"timeoutSeconds": 5, "command": "i=0; while [ $i -lt 2000 ]; do sleep 3 & i=$((i+1)); done; echo spawned"})
	if os.Geteuid() != 0 && strings.Contains(got, "spawned") && !strings.Contains(strings.ToLower(got), "fork") {
		t.Errorf("2000 processes started in the sandbox: %q", got)
	}
	// The recursive bomb runs only where RLIMIT_NPROC binds (not as
	// root): unbounded, it exhausts the host's PID space for the whole
	// machine within its timeout, failing every test running beside it.
	if os.Geteuid() != 0 {
		got = g.tool(t, key, "bomb2", "exec", map[string]any{"timeoutSeconds": 2, "command": "b() { b & b & wait; }; b"})
		if !strings.Contains(got, "Command timed out after 2 seconds.") && !strings.Contains(strings.ToLower(got), "fork") {
			t.Errorf("recursive fork bomb result = %q", got)
		}
	} else {
		t.Log("recursive fork bomb not run: the gateway runs as root, which RLIMIT_NPROC does not bind (README: sandbox limits)")
	}
	if got := g.tool(t, key, "after", "exec", map[string]any{"command": "echo alive"}); got != "alive\n" {
		t.Errorf("after the escapes exec = %q", got)
	}
}

// The file tools of a sandboxed session see no more than its exec: with
// the workspace read-only only read and ls are offered; with none all of
// them (the sandbox tool policy's defaults drop agents_list and
// web_fetch), on the sandbox's private workspace (under
// <state dir>/sandboxes, one per agent by default) that exec works in too.
func TestFileToolsFollowWorkspaceAccess(t *testing.T) {
	requireBwrap(t)
	for _, tc := range []struct{ access, want string }{
		{"ro", "exec ls process read sessions_history sessions_list sessions_send sessions_spawn"},
		{"none", "apply_patch edit exec ls process read sessions_history sessions_list sessions_send sessions_spawn write"},
		{"rw", "apply_patch edit exec ls process read sessions_history sessions_list sessions_send sessions_spawn write"},
	} {
		t.Run(tc.access, func(t *testing.T) {
			g := start(t, `{ id: "main", default: true, sandbox: { mode: "all", workspaceAccess: "`+tc.access+`" } }`, ``)
			got := g.tool(t, "agent:main:main", "e", "exec", map[string]any{"command": "echo x > f && echo WROTE; pwd"})
			reqs := g.llm.Requests()
			var names []string
			for _, d := range reqs[len(reqs)-1].Request.Tools {
				names = append(names, d.Name)
			}
			if s := sortedJoin(names); s != tc.want {
				t.Errorf("offered %q, want %q", s, tc.want)
			}
			wrote := strings.Contains(got, "WROTE")
			if wrote != (tc.access != "ro") {
				t.Errorf("access %s: write result %q", tc.access, got)
			}
			if tc.access != "none" {
				return
			}
			// The private workspace: exec starts there, its files stay
			// for the next command and the file tools, and the agent's
			// own workspace is untouched.
			priv := filepath.Join(g.dir, "sandboxes", "agent-main")
			if !strings.Contains(got, priv) {
				t.Errorf("access none runs in %q, want %s", got, priv)
			}
			if b, err := os.ReadFile(filepath.Join(priv, "f")); err != nil || string(b) != "x\n" {
				t.Errorf("file written by exec: %q, %v", b, err)
			}
			if _, err := os.Stat(filepath.Join(g.dir, "workspace", "f")); err == nil {
				t.Error("exec with access none wrote the agent workspace")
			}
			if r := g.tool(t, "agent:main:main", "r", "read", map[string]any{"path": "f"}); !strings.Contains(r, "x") {
				t.Errorf("read of exec's file = %q", r)
			}
			g.tool(t, "agent:main:main", "w", "write", map[string]any{"path": "notes.txt", "content": "from write"})
			if r := g.tool(t, "agent:main:main", "c", "exec", map[string]any{"command": "cat notes.txt"}); r != "from write" {
				t.Errorf("exec cat of the write tool's file = %q", r)
			}
			if _, err := os.Stat(filepath.Join(g.dir, "workspace", "notes.txt")); err == nil {
				t.Error("the write tool with access none wrote the agent workspace")
			}
			// Out of the private workspace: refused, by both.
			if r := g.tool(t, "agent:main:main", "o", "write", map[string]any{"path": filepath.Join(g.dir, "workspace", "x"), "content": "no"}); !strings.Contains(r, "path escapes the workspace") {
				t.Errorf("write outside the sandbox workspace = %q", r)
			}
			if _, err := os.Stat(filepath.Join(g.dir, "workspace", "x")); err == nil {
				t.Error("write reached the agent workspace")
			}
		})
	}
}

// Scope decides which sessions share a private workspace: one per agent
// by default, one per session under scope "session", one for all under
// "shared"; sandbox.workspaceRoot moves them.
func TestSandboxScopeWorkspaces(t *testing.T) {
	requireBwrap(t)
	root := t.TempDir()
	for _, tc := range []struct{ scope, a, b string }{
		{"agent", "agent-main", "agent-main"},
		{"session", "session-agent-main-one-", "session-agent-main-two-"},
		{"shared", "shared", "shared"},
	} {
		t.Run(tc.scope, func(t *testing.T) {
			wr := filepath.Join(root, tc.scope)
			g := start(t, `{ id: "main", default: true, sandbox: { mode: "all", scope: "`+tc.scope+`", workspaceRoot: "`+wr+`" } }`, ``)
			pa := g.tool(t, "agent:main:one", "a", "exec", map[string]any{"command": "pwd; echo one > mark"})
			pb := g.tool(t, "agent:main:two", "b", "exec", map[string]any{"command": "pwd; cat mark 2>/dev/null || echo absent"})
			if !strings.HasPrefix(pa, filepath.Join(wr, tc.a)) || !strings.HasPrefix(pb, filepath.Join(wr, tc.b)) {
				t.Fatalf("scope %s: one in %q, two in %q", tc.scope, pa, pb)
			}
			shared := tc.scope != "session"
			if strings.Contains(pb, "absent") == shared {
				t.Errorf("scope %s: the second session sees the first's file: %q (want shared %v)", tc.scope, pb, shared)
			}
		})
	}
}

// Without bwrap the sandboxed run fails before the model is called,
// naming the missing piece and the fix; nothing runs on the host.
func TestFailClosedWithoutBwrap(t *testing.T) {
	g := start(t, sandboxedAgent, ``, "PATH="+t.TempDir())
	w := g.send(t, "agent:main:main", "fc", "exec", map[string]any{"command": "touch ran"})
	if w["status"] != "error" || !strings.Contains(fmt.Sprint(w["error"]), "bwrap not found") ||
		!strings.Contains(fmt.Sprint(w["error"]), "apt-get install bubblewrap") {
		t.Fatalf("run = %v", w)
	}
	if n := len(g.llm.Requests()); n != 0 {
		t.Errorf("model called %d times", n)
	}
	if _, err := os.Stat(filepath.Join(g.dir, "workspace", "ran")); err == nil {
		t.Error("command ran on the host")
	}
}

func sortedJoin(s []string) string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return strings.Join(s, " ")
}

// A child spawned into a sandbox with workspaceAccess none finds its
// attachments in its own sandbox workspace, where its exec and file tools
// are, even when the parent is not sandboxed (mode non-main).
func TestSpawnAttachmentsReachASandboxedChild(t *testing.T) {
	requireBwrap(t)
	g := start(t, `{ id: "main", default: true, sandbox: { mode: "non-main" } }`, `tools: { sessions_spawn: { attachments: { enabled: true } } },`)
	task := "read the note\n/tool exec {\"command\":\"cat .switchboard/attachments/*/note.txt; pwd\"}\n/then read it"
	w := g.send(t, "agent:main:main", "sp", "sessions_spawn", map[string]any{"task": task,
		"attachments": []map[string]any{{"name": "note.txt", "content": "hello child"}}})
	if w["status"] != "ok" {
		t.Fatalf("spawn run = %v", w)
	}
	hist := g.call(t, "chat.history", map[string]any{"sessionKey": "agent:main:main", "limit": 100})
	var child map[string]any
	for _, m := range hist["messages"].([]any) {
		if m := m.(map[string]any); m["toolName"] == "sessions_spawn" {
			child, _ = m["details"].(map[string]any)
		}
	}
	if child == nil || child["status"] != "accepted" {
		t.Fatalf("spawn result = %v", child)
	}
	if w := g.call(t, "agent.wait", map[string]any{"runId": child["runId"], "timeoutMs": 60000}); w["status"] != "ok" {
		t.Fatalf("child run = %v", w)
	}
	ch := g.call(t, "chat.history", map[string]any{"sessionKey": child["childSessionKey"], "limit": 100})
	got := ""
	for _, m := range ch["messages"].([]any) {
		if m := m.(map[string]any); m["toolName"] == "exec" {
			b, _ := json.Marshal(m["content"])
			got = string(b)
		}
	}
	if !strings.Contains(got, "hello child") || !strings.Contains(got, filepath.Join(g.dir, "sandboxes", "agent-main")) {
		b, _ := json.Marshal(ch)
		t.Errorf("the child's exec = %s\n%.3000s", got, b)
	}
}

// tools.elevated is the operator's way out of the sandbox: a sandboxed
// session's exec {elevated: true} runs on the gateway host only when the
// sender is on tools.elevated.allowFrom; otherwise the model reads the
// reference's refusal and nothing runs.
func TestElevatedExecLeavesTheSandbox(t *testing.T) {
	requireBwrap(t)
	probe := func(g *gateway) string {
		return g.tool(t, "agent:main:main", "el", "exec", map[string]any{"elevated": true, "command": "ls " + g.dir + " && touch " + filepath.Join(g.dir, "elevated-ran")})
	}
	g := start(t, sandboxedAgent, ``)
	got := probe(g)
	if !strings.Contains(got, "elevated is not available right now (runtime=sandboxed).") || !strings.Contains(got, "tools.elevated.allowFrom.<provider>") {
		t.Errorf("elevated without allowFrom = %q", got)
	}
	if _, err := os.Stat(filepath.Join(g.dir, "elevated-ran")); err == nil {
		t.Error("a refused elevated command ran")
	}
	if got := g.tool(t, "agent:main:main", "plain", "exec", map[string]any{"command": "ls " + g.dir}); strings.Contains(got, "switchboard.json5") {
		t.Errorf("the sandbox sees the state dir: %q", got)
	}

	g = start(t, sandboxedAgent, `tools: { elevated: { allowFrom: { webchat: ["*"] } } },`)
	if got := probe(g); !strings.Contains(got, "switchboard.json5") {
		t.Errorf("elevated exec = %q, want the state dir listed from the host", got)
	}
	if _, err := os.Stat(filepath.Join(g.dir, "elevated-ran")); err != nil {
		t.Errorf("the elevated command did not run on the host: %v", err)
	}
	// Without elevated it stays in the sandbox, and host gateway is refused.
	if got := g.tool(t, "agent:main:main", "gw", "exec", map[string]any{"host": "gateway", "command": "true"}); !strings.Contains(got, "exec host not allowed (requested gateway") {
		t.Errorf("host gateway from the sandbox = %q", got)
	}
	// The session's level (/elevated, sessions.patch elevatedLevel) sends
	// plain exec calls to the host too.
	lastReply := func(g *gateway, msg, id string) string {
		g.call(t, "chat.send", map[string]any{"sessionKey": "agent:main:main", "message": msg, "idempotencyKey": id})
		hist := g.call(t, "chat.history", map[string]any{"sessionKey": "agent:main:main", "limit": 1})
		msgs, _ := hist["messages"].([]any)
		if len(msgs) == 0 {
			return ""
		}
		b, _ := json.Marshal(msgs[len(msgs)-1].(map[string]any)["content"])
		var blocks []struct{ Text string }
		_ = json.Unmarshal(b, &blocks)
		if len(blocks) == 0 {
			return ""
		}
		return blocks[0].Text
	}
	if r := lastReply(g, "/elevated on", "lvl-on"); r != "⚙️ Elevated mode set to ask (approvals may still apply)." {
		t.Errorf("/elevated on replied %q", r)
	}
	if r := lastReply(g, "/elevated", "lvl-show"); r != "Current elevated level: on.\nOptions: on, off, ask, full." {
		t.Errorf("/elevated replied %q", r)
	}
	if got := g.tool(t, "agent:main:main", "lvl-exec", "exec", map[string]any{"command": "ls " + g.dir}); !strings.Contains(got, "switchboard.json5") {
		t.Errorf("exec at level on = %q, want it on the host", got)
	}
	g.call(t, "sessions.patch", map[string]any{"key": "agent:main:main", "elevatedLevel": "off"})
	if got := g.tool(t, "agent:main:main", "lvl-off", "exec", map[string]any{"command": "ls " + g.dir}); strings.Contains(got, "switchboard.json5") {
		t.Errorf("exec at level off = %q, want it in the sandbox", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	perr := g.c.Call(ctx, "sessions.patch", map[string]any{"key": "agent:main:main", "elevatedLevel": "sometimes"}, nil)
	cancel()
	if perr == nil || !strings.Contains(perr.Error(), `invalid elevatedLevel (use "on"|"off"|"ask"|"full")`) {
		t.Errorf("sessions.patch with a bad level: %v", perr)
	}

	g = start(t, `{ id: "main", default: true, sandbox: { mode: "all", workspaceAccess: "rw" }, tools: { elevated: { enabled: false } } }`,
		`tools: { elevated: { allowFrom: { webchat: ["*"] } } },`)
	if got := probe(g); !strings.Contains(got, "Failing gates: enabled (tools.elevated.enabled") {
		t.Errorf("elevated with the agent's gate off = %q", got)
	}
	if r := lastReply(g, "/elevated full", "lvl-no"); !strings.HasPrefix(r, "elevated is not available right now (runtime=sandboxed).\nFailing gates: enabled") ||
		!strings.Contains(r, "switchboard sandbox explain --session agent:main:main") {
		t.Errorf("/elevated full with the gate off replied %q", r)
	}
	if got := g.tool(t, "agent:main:main", "lvl-refused", "exec", map[string]any{"command": "ls " + g.dir}); strings.Contains(got, "switchboard.json5") {
		t.Errorf("exec after a refused /elevated = %q, want it in the sandbox", got)
	}
}

// The private workspace's quota holds while a command runs (issue 30: one
// command wrote 1.6 GiB into a workspace with a quota checked only before
// commands): a command writing many files, each far below the file size
// limit, is stopped once they pass the configured workspaceQuota and the
// model reads why; one under the quota runs as before.
func TestWorkspaceQuotaHoldsDuringACommand(t *testing.T) {
	requireBwrap(t)
	const quota = 4 << 20
	root := t.TempDir()
	g := start(t, `{ id: "main", default: true, sandbox: { mode: "all", workspaceAccess: "none", workspaceRoot: "`+root+`", workspaceQuota: "4mb" } }`,
		`tools: { exec: { timeoutSeconds: 120 } },`)
	const key = "agent:main:main"
	ws := filepath.Join(root, "agent-main")
	small := g.tool(t, key, "small", "exec", map[string]any{"command": "head -c 1000000 /dev/zero > small && wc -c < small && echo under"})
	if !strings.Contains(small, "1000000") || !strings.Contains(small, "under") || strings.Contains(small, "quota") {
		t.Fatalf("command under the quota = %q", small)
	}
	// 2048 files of 128 KiB: 256 MiB unless something stops it.
	fill := `i=0; while [ $i -lt 2048 ]; do head -c 131072 /dev/zero > f$i || exit 3; i=$((i+1)); done; echo "all written"`
	got := g.tool(t, key, "fill", "exec", map[string]any{"command": fill, "yieldMs": 120000})
	used := dirBytes(t, ws)
	t.Logf("workspace holds %d bytes after the fill, quota %d", used, quota)
	if strings.Contains(got, "all written") {
		t.Fatalf("the command wrote past the quota to its end (%d bytes): %q", used, got)
	}
	if want := "went over its quota of 4194304 bytes"; !strings.Contains(got, want) {
		t.Fatalf("result = %q, want it to say %q", got, want)
	}
	// The documented slack: what the command writes while the watcher
	// confirms and kills (docs/sandbox.md), far below what it tried.
	if used > quota+quotaSlack {
		t.Fatalf("workspace holds %d bytes, over the quota %d plus the slack %d", used, quota, quotaSlack)
	}
	// Over the quota now, the next command does not start; freed, it does.
	if got := g.tool(t, key, "next", "exec", map[string]any{"command": "echo ran"}); !strings.Contains(got, "over its quota of 4194304 bytes") {
		t.Fatalf("command in a full workspace = %q", got)
	}
	files, _ := filepath.Glob(filepath.Join(ws, "f*"))
	for _, f := range files {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	if got := g.tool(t, key, "freed", "exec", map[string]any{"command": "cat small | wc -c"}); !strings.Contains(got, "1000000") {
		t.Fatalf("command after freeing space = %q", got)
	}
}

// quotaSlack bounds, in this test, how far past the quota a command
// writing as fast as a shell loop gets before it is stopped (64–208 KiB
// measured on a loaded 2-core VM; docs/sandbox.md), far below the 256 MiB
// it would write unstopped.
const quotaSlack = 64 << 20

// dirBytes is what the regular files under dir hold.
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
