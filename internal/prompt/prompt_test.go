package prompt

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/fsstamp"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/skills"
	"github.com/switchboardhq/switchboard/internal/store"
)

// TestSystemPromptMemory: MEMORY.md follows the bootstrap files in private
// sessions only; a linked AGENTS.md is still followed, a linked MEMORY.md
// is not.
func TestSystemPromptMemory(t *testing.T) {
	ws := t.TempDir()
	cfg, _, err := config.Parse("t.json5", fmt.Appendf(nil, `{agents: {list: [{id: "main", default: true, workspace: %q}]}}`, ws), config.MapEnv(map[string]string{"HOME": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	for name, content := range map[string]string{"AGENTS.md": "agent rules", "MEMORY.md": "linked memory"} {
		if err := os.WriteFile(filepath.Join(outside, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "AGENTS.md"), filepath.Join(ws, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "MEMORY.md"), filepath.Join(ws, "MEMORY.md")); err != nil {
		t.Fatal(err)
	}
	prompt := Builder(settings.Resolve(cfg), nil, nil)
	got := prompt(t.Context(), agent.RunInfo{AgentID: "main", SessionKey: "agent:main:main"})
	if got != "## AGENTS.md\n\nagent rules" {
		t.Fatalf("prompt with a linked MEMORY.md = %q", got)
	}
	if err := os.Remove(filepath.Join(ws, "MEMORY.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "MEMORY.md"), []byte("fact one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		info agent.RunInfo
		want bool
	}{
		{"main", agent.RunInfo{AgentID: "main", SessionKey: "agent:main:main"}, true},
		{"subagent", agent.RunInfo{AgentID: "main", SessionKey: "agent:main:subagent:abc"}, false},
		{"spawned", agent.RunInfo{AgentID: "main", SessionKey: "agent:main:x", Session: &store.Session{SpawnedBy: "agent:main:main"}}, false},
		{"group", agent.RunInfo{AgentID: "main", SessionKey: "agent:main:telegram:group:1"}, false},
		{"cron", agent.RunInfo{AgentID: "main", SessionKey: "agent:main:cron:job1"}, false},
	} {
		got := prompt(t.Context(), tc.info)
		if has := strings.Contains(got, "## MEMORY.md\n\nfact one"); has != tc.want {
			t.Errorf("%s: MEMORY.md in prompt = %v, want %v (%q)", tc.name, has, tc.want, got)
		}
	}
}

// A bootstrap file hard-linked to a file outside the workspace (the
// config with its tokens) is left out of the system prompt, as the read
// tool refuses it; the other bootstrap files still make the prompt.
func TestSystemPromptSkipsHardLinkedFiles(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(dir, "switchboard.json5")
	if err := os.WriteFile(secretFile, []byte(`{gateway: {auth: {token: "GATEWAY-TOKEN-xyz"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secretFile, filepath.Join(ws, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "SOUL.md"), []byte("be kind"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Parse("t.json5", fmt.Appendf(nil, `{agents: {defaults: {workspace: %q}}}`, ws), config.MapEnv(map[string]string{"HOME": dir}))
	if err != nil {
		t.Fatal(err)
	}
	got := Builder(settings.Resolve(cfg), nil, nil)(t.Context(), agent.RunInfo{AgentID: "main"})
	if strings.Contains(got, "GATEWAY-TOKEN") || strings.Contains(got, "AGENTS.md") {
		t.Errorf("the hard-linked AGENTS.md reached the prompt: %q", got)
	}
	if got != "## SOUL.md\n\nbe kind" {
		t.Errorf("prompt = %q, want only SOUL.md", got)
	}
}

// TestSystemPromptBudgetsFromConfig: agents.defaults.bootstrapMaxChars and
// bootstrapTotalMaxChars cut the workspace files as the defaults would.
func TestSystemPromptBudgetsFromConfig(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("soul line of text\n", 200) // 3,600 characters
	os.WriteFile(filepath.Join(ws, "SOUL.md"), []byte(body), 0o600)
	os.WriteFile(filepath.Join(ws, "USER.md"), []byte("the user likes tea\n"), 0o600)
	prompt := func(defaults string) string {
		t.Helper()
		cfg, _, err := config.Parse("t.json5", fmt.Appendf(nil, `{agents: {defaults: {workspace: %q, %s}}}`, ws, defaults), config.MapEnv(map[string]string{"HOME": dir}))
		if err != nil {
			t.Fatal(err)
		}
		return Builder(settings.Resolve(cfg), nil, nil)(t.Context(), agent.RunInfo{AgentID: "main"})
	}
	if whole := prompt(""); !strings.Contains(whole, strings.TrimSpace(body)) || !strings.Contains(whole, "likes tea") {
		t.Fatalf("default budgets cut a small workspace: %d chars", len(whole))
	}
	if cut := prompt("bootstrapMaxChars: 1000,"); len(cut) > 1400 || strings.Contains(cut, strings.TrimSpace(body)) || !strings.Contains(cut, "likes tea") {
		t.Errorf("bootstrapMaxChars 1000: %d chars:\n%s", len(cut), cut)
	}
	if total := prompt("bootstrapTotalMaxChars: 1200,"); strings.Contains(total, "likes tea") || len(total) > 1400 {
		t.Errorf("bootstrapTotalMaxChars 1200 kept USER.md or went over: %d chars", len(total))
	}
}

// TestBootstrapCacheRereadsOnlyChangedFiles: an unchanged bootstrap file
// is read once and then served from the cache; a rewrite (same size, a new
// modification time), a replacement by rename and a new hard link are seen
// on the next call, and a file modified just now is read every time.
func TestBootstrapCacheRereadsOnlyChangedFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "AGENTS.md")
	old := time.Now().Add(-time.Hour)
	write := func(content string, mtime time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	c := bootstrapCache{absent: &fsstamp.Cache{}}
	check := func(want string, reads int) {
		t.Helper()
		got, err := c.read(new(c.absent.View()), path)
		if err != nil {
			t.Fatal(err)
		}
		if got != want || c.reads != reads {
			t.Fatalf("read = %q after %d file reads, want %q after %d", got, c.reads, want, reads)
		}
	}
	write("one", old)
	check("one", 1)
	check("one", 1)
	check("one", 1)

	write("two", old.Add(time.Second)) // same size, a new time
	check("two", 2)
	check("two", 2)

	other := filepath.Join(dir, "new.md")
	if err := os.WriteFile(other, []byte("six"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(other, old.Add(time.Second), old.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, path); err != nil { // same size and time, another file
		t.Fatal(err)
	}
	check("six", 3)
	check("six", 3)

	if err := os.Link(path, filepath.Join(dir, "outside")); err != nil {
		t.Fatal(err)
	}
	if got, err := c.read(new(c.absent.View()), path); err == nil {
		t.Fatalf("a hard-linked file was served: %q", got)
	}
	if err := os.Remove(filepath.Join(dir, "outside")); err != nil {
		t.Fatal(err)
	}

	now := time.Now()
	write("ten", now)
	check("ten", 4)
	check("ten", 5)   // too recent to keep
	write("elf", now) // same size, same time: still seen
	check("elf", 6)
}

// A run's bootstrap paths are joined once per workspace: a warm turn
// allocates none, and each workspace gets its own.
func TestBootstrapPathsJoinedOnce(t *testing.T) {
	var c bootstrapCache
	a, b := filepath.Join("ws", "a"), filepath.Join("ws", "b")
	for _, dir := range []string{a, b, a} {
		got := c.paths(dir)
		if len(got) != len(bootstrapFiles) {
			t.Fatalf("paths(%s) = %q", dir, got)
		}
		for i, name := range bootstrapFiles {
			if got[i] != filepath.Join(dir, name) {
				t.Errorf("paths(%s)[%d] = %q, want %q", dir, i, got[i], filepath.Join(dir, name))
			}
		}
	}
	if n := testing.AllocsPerRun(50, func() { _ = c.paths(a) }); n != 0 {
		t.Errorf("paths of a seen workspace made %v allocations, want 0", n)
	}
}

// TestWarmTurnStatsAndSeesChanges: a turn on a workspace without
// bootstrap, memory or skill files stats the workspace and the state dir
// only (the missing files and skill folders are known absent while they
// are unchanged), and a turn after each kind of file or skill is created,
// edited, renamed into place or removed shows the change. The Cache's
// clock runs an hour ahead so that every stamp is trusted: the changes are
// seen through the folders' stamps, not because they are recent.
func TestWarmTurnStatsAndSeesChanges(t *testing.T) {
	state := t.TempDir()
	ws := filepath.Join(state, "workspace")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Parse("t.json5", fmt.Appendf(nil, `{agents: {list: [{id: "main", default: true, workspace: %q}]}}`, ws),
		config.MapEnv(map[string]string{"HOME": t.TempDir(), "SWITCHBOARD_STATE_DIR": state}))
	if err != nil {
		t.Fatal(err)
	}
	set := settings.Resolve(cfg)
	var stats []string
	abs := &fsstamp.Cache{
		StatFunc:  func(p string) (fs.FileInfo, error) { stats = append(stats, p); return os.Stat(p) },
		LstatFunc: func(p string) (fs.FileInfo, error) { stats = append(stats, p); return os.Lstat(p) },
		NowFunc:   func() time.Time { return time.Now().Add(time.Hour) },
	}
	build := newBuilder(set, nil, &skills.Agents{Resolve: set.SkillScope}, &bootstrapCache{absent: abs})
	info := agent.RunInfo{AgentID: "main", SessionKey: "agent:main:main"}
	turn := func() string { stats = nil; return build(t.Context(), info) }
	// warmStats: the workspace (the bootstrap files and two skill roots)
	// and the state dir (the managed skills).
	const warmStats = 2
	warm := func(step string) {
		t.Helper()
		turn()
		if got := turn(); got != "" || len(stats) > warmStats {
			t.Fatalf("%s: a warm turn on an empty workspace stat'ed %d paths %q (want at most %d) and built %q", step, len(stats), stats, warmStats, got)
		}
	}
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(state, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	remove := func(rel string) {
		t.Helper()
		if err := os.RemoveAll(filepath.Join(state, rel)); err != nil {
			t.Fatal(err)
		}
	}
	shows := func(step, want string, has bool) {
		t.Helper()
		if got := turn(); strings.Contains(got, want) != has {
			t.Fatalf("%s: prompt has %q = %v, want %v:\n%s", step, want, !has, has, got)
		}
	}
	skill := func(name string) string {
		return "---\nname: " + name + "\ndescription: does " + name + "\n---\nSteps.\n"
	}

	warm("start")
	for _, name := range []string{"AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "MEMORY.md"} {
		rel := filepath.Join("workspace", name)
		write(rel, "first "+name)
		shows(name+" created", "first "+name, true)
		write(rel, "other "+name) // the same size, edited in place
		shows(name+" edited", "other "+name, true)
		remove(rel)
		shows(name+" removed", name, false)
		write("elsewhere", "moved "+name)
		if err := os.Rename(filepath.Join(state, "elsewhere"), filepath.Join(state, rel)); err != nil {
			t.Fatal(err)
		}
		shows(name+" renamed into place", "moved "+name, true)
		remove(rel)
		shows(name+" removed again", name, false)
	}
	warm("bootstrap files gone")
	for _, root := range []string{"workspace/skills", "workspace/.agents/skills", "skills"} {
		write(filepath.Join(root, "tea", "SKILL.md"), skill("tea"))
		shows(root+": skill created", "does tea", true)
		write(filepath.Join(root, "tea", "SKILL.md"), skill("tee"))
		shows(root+": skill edited", "does tee", true)
		remove(filepath.Join(root, "tea"))
		shows(root+": skill removed", "does tee", false)
		remove(root)
		shows(root+": root removed", "## Skills", false)
		if root == "workspace/.agents/skills" {
			remove("workspace/.agents")
		}
	}
	warm("skills gone")
}
