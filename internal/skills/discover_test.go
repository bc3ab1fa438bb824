package skills

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func writeSkill(t *testing.T, dir, name, desc string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "SKILL.md")
	body := "---\nname: " + name + "\ndescription: " + desc + "\n---\nSteps.\n"
	if name == "" {
		body = "---\ndescription: " + desc + "\n---\nSteps.\n"
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func byName(list []*Skill) map[string]*Skill {
	m := map[string]*Skill{}
	for _, s := range list {
		m[s.Name] = s
	}
	return m
}

func TestDiscoverPrecedenceAndLayout(t *testing.T) {
	base := t.TempDir()
	ws, project, managed, extra := filepath.Join(base, "ws/skills"), filepath.Join(base, "ws/.agents/skills"), filepath.Join(base, "state/skills"), filepath.Join(base, "extra")
	writeSkill(t, filepath.Join(ws, "research"), "", "workspace research")
	writeSkill(t, filepath.Join(managed, "research"), "", "managed research")
	writeSkill(t, filepath.Join(project, "personal/deep/notes"), "notes", "grouped, three levels down")
	writeSkill(t, filepath.Join(managed, "weather"), "weather", "managed weather")
	writeSkill(t, filepath.Join(extra, "weather"), "weather", "extra weather")
	writeSkill(t, filepath.Join(extra, "only-extra"), "", "extra only")
	// A SKILL.md ends the descent: the nested one is not a second skill.
	writeSkill(t, filepath.Join(extra, "only-extra/inner"), "inner", "hidden below a skill")
	writeSkill(t, filepath.Join(ws, ".hidden/x"), "hidden", "in a hidden folder")
	writeSkill(t, filepath.Join(ws, "a/b/c/d/e/f/g"), "too-deep", "seven levels down")
	writeSkill(t, filepath.Join(ws, "a/b/c/d/e/six"), "six-deep", "six levels down")

	var l Loader
	got, problems := l.Discover([]Root{
		{ws, SourceWorkspace}, {project, SourceProject}, {managed, SourceManaged}, {extra, SourceExtra}, {filepath.Join(base, "absent"), SourceExtra},
	}, nil)
	if len(problems) != 0 {
		t.Fatalf("problems: %+v", problems)
	}
	m := byName(got)
	if want := []string{"notes", "only-extra", "research", "six-deep", "weather"}; !slices.Equal(Names(got), want) {
		t.Fatalf("names = %v, want %v", Names(got), want)
	}
	if s := m["research"]; s.Description != "workspace research" || s.Source != SourceWorkspace {
		t.Errorf("research = %+v, want the workspace's", s)
	}
	if s := m["weather"]; s.Description != "managed weather" || s.Source != SourceManaged {
		t.Errorf("weather = %+v, want the managed one", s)
	}
	if s := m["notes"]; s.Source != SourceProject || s.FilePath != filepath.Join(project, "personal/deep/notes/SKILL.md") {
		t.Errorf("notes = %+v", s)
	}
}

func TestDiscoverRefusesHostileFiles(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "skills")
	outside := filepath.Join(base, "outside")
	writeSkill(t, filepath.Join(root, "good"), "good", "fine")
	writeSkill(t, outside, "escaped", "outside the root")
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	// A SKILL.md that is a symlink out of its folder.
	if err := os.MkdirAll(filepath.Join(root, "mdlink"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "SKILL.md"), filepath.Join(root, "mdlink/SKILL.md")); err != nil {
		t.Fatal(err)
	}
	// Too big, bad YAML, a FIFO.
	big := filepath.Join(root, "big")
	os.MkdirAll(big, 0o755)
	os.WriteFile(filepath.Join(big, "SKILL.md"), []byte("---\nname: big\ndescription: d\n---\n"+strings.Repeat("x", MaxFileBytes)), 0o644)
	bad := filepath.Join(root, "bad")
	os.MkdirAll(bad, 0o755)
	os.WriteFile(filepath.Join(bad, "SKILL.md"), []byte("---\nname: bad\ndescription: d\nmetadata:\n  {{{ nope\n---\n"), 0o644)
	os.WriteFile(filepath.Join(root, "SKILL.md"), []byte("---\nname: rootfile\ndescription: d\n---\n"), 0o644)

	var l Loader
	got, problems := l.Discover([]Root{{root, SourceWorkspace}}, nil)
	if names := Names(got); !slices.Equal(names, []string{"good"}) {
		t.Fatalf("names = %v, want only good", names)
	}
	wantProblems := map[string]string{
		filepath.Join(root, "link"):            "outside its skills directory",
		filepath.Join(root, "mdlink/SKILL.md"): "outside its skill folder",
		filepath.Join(big, "SKILL.md"):         "over the limit",
		filepath.Join(bad, "SKILL.md"):         "frontmatter",
		filepath.Join(root, "SKILL.md"):        "folder of its own",
	}
	for _, p := range problems {
		want, ok := wantProblems[p.Path]
		if !ok || !strings.Contains(p.Message, want) {
			t.Errorf("problem %s: %q, want %q", p.Path, p.Message, want)
		}
		delete(wantProblems, p.Path)
	}
	if len(wantProblems) != 0 {
		t.Errorf("missing problems: %v", wantProblems)
	}
	// A trusted target lets the symlinked folder in.
	got, _ = l.Discover([]Root{{root, SourceWorkspace}}, []string{outside})
	if names := Names(got); !slices.Contains(names, "escaped") {
		t.Errorf("with the target trusted, names = %v", names)
	}
}

func TestDiscoverSeesEdits(t *testing.T) {
	root := t.TempDir()
	p := writeSkill(t, filepath.Join(root, "x"), "x", "first")
	var l Loader
	got, _ := l.Discover([]Root{{root, SourceWorkspace}}, nil)
	if got[0].Description != "first" {
		t.Fatal(got[0].Description)
	}
	if err := os.WriteFile(p, []byte("---\nname: x\ndescription: second, longer\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Same size edits are seen by the modification time.
	os.Chtimes(p, time.Now().Add(time.Hour), time.Now().Add(time.Hour))
	got, _ = l.Discover([]Root{{root, SourceWorkspace}}, nil)
	if got[0].Description != "second, longer" {
		t.Fatalf("after the edit: %q", got[0].Description)
	}
	writeSkill(t, filepath.Join(root, "y"), "y", "new")
	if got, _ = l.Discover([]Root{{root, SourceWorkspace}}, nil); len(got) != 2 {
		t.Fatalf("after adding one: %v", Names(got))
	}
	os.RemoveAll(filepath.Join(root, "x"))
	if got, _ = l.Discover([]Root{{root, SourceWorkspace}}, nil); !slices.Equal(Names(got), []string{"y"}) {
		t.Fatalf("after removing one: %v", Names(got))
	}
	if len(l.cache) != 1 {
		t.Errorf("cache holds %d entries after a removal, want 1", len(l.cache))
	}
}

func TestStatusGates(t *testing.T) {
	bins := map[string]bool{"uv": true, "git": true}
	env := map[string]string{"HAVE": "1"}
	no, yes := false, true
	base := Policy{
		LookPath: func(b string) (string, error) {
			if bins[b] {
				return "/usr/bin/" + b, nil
			}
			return "", errors.New("not found")
		},
		LookupEnv:    func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		ConfigTruthy: func(p string) bool { return p == "browser.enabled" },
		OS:           "linux",
	}
	md := func(m Metadata) *Skill { return &Skill{Name: "s", Description: "d", UserInvocable: true, Metadata: &m} }
	tests := []struct {
		name     string
		skill    *Skill
		policy   func(Policy) Policy
		eligible bool
		visible  bool
		check    func(Status) bool
	}{
		{name: "no metadata", skill: &Skill{Name: "s", Description: "d", UserInvocable: true}, eligible: true, visible: true},
		{name: "bins present", skill: md(Metadata{Requires: Requires{Bins: []string{"uv", "git"}}}), eligible: true, visible: true},
		{name: "a bin missing", skill: md(Metadata{Requires: Requires{Bins: []string{"uv", "ffmpeg"}}}),
			check: func(s Status) bool { return slices.Equal(s.Missing.Bins, []string{"ffmpeg"}) }},
		{name: "anyBins one present", skill: md(Metadata{Requires: Requires{AnyBins: []string{"nope", "git"}}}), eligible: true, visible: true},
		{name: "anyBins none present", skill: md(Metadata{Requires: Requires{AnyBins: []string{"a", "b"}}}),
			check: func(s Status) bool { return len(s.Missing.AnyBins) == 2 }},
		{name: "env from the process", skill: md(Metadata{Requires: Requires{Env: []string{"HAVE"}}}), eligible: true, visible: true},
		{name: "env missing", skill: md(Metadata{Requires: Requires{Env: []string{"KEY"}}}),
			check: func(s Status) bool { return slices.Equal(s.Missing.Env, []string{"KEY"}) }},
		{name: "env from the entry", skill: md(Metadata{Requires: Requires{Env: []string{"KEY"}}}),
			policy: func(p Policy) Policy {
				p.Entries = map[string]Entry{"s": {Env: map[string]string{"KEY": "v"}}}
				return p
			}, eligible: true, visible: true},
		{name: "primaryEnv from apiKey", skill: md(Metadata{PrimaryEnv: "KEY", Requires: Requires{Env: []string{"KEY"}}}),
			policy: func(p Policy) Policy { p.Entries = map[string]Entry{"s": {APIKey: "k"}}; return p }, eligible: true, visible: true},
		{name: "config truthy", skill: md(Metadata{Requires: Requires{Config: []string{"browser.enabled"}}}), eligible: true, visible: true,
			check: func(s Status) bool { return s.ConfigChecks[0].Satisfied }},
		{name: "config falsy", skill: md(Metadata{Requires: Requires{Config: []string{"x.y"}}}),
			check: func(s Status) bool { return !s.ConfigChecks[0].Satisfied && s.Missing.Config[0] == "x.y" }},
		{name: "os matches (macos is darwin)", skill: md(Metadata{OS: []string{"macos", "linux"}}), eligible: true, visible: true},
		{name: "os does not match", skill: md(Metadata{OS: []string{"darwin"}}), check: func(s Status) bool { return s.PlatformIncompatible }},
		{name: "always skips requirements", skill: md(Metadata{Always: true, Requires: Requires{Bins: []string{"ffmpeg"}, Env: []string{"KEY"}}}), eligible: true, visible: true},
		{name: "always does not beat the os", skill: md(Metadata{Always: true, OS: []string{"win32"}})},
		{name: "disabled by its entry", skill: &Skill{Name: "s", Description: "d"},
			policy: func(p Policy) Policy { p.Entries = map[string]Entry{"s": {Enabled: &no}}; return p },
			check:  func(s Status) bool { return s.Disabled }},
		{name: "enabled entry", skill: &Skill{Name: "s", Description: "d"},
			policy: func(p Policy) Policy { p.Entries = map[string]Entry{"s": {Enabled: &yes}}; return p }, eligible: true, visible: true},
		{name: "entry by skillKey", skill: md(Metadata{SkillKey: "other"}),
			policy: func(p Policy) Policy { p.Entries = map[string]Entry{"other": {Enabled: &no}}; return p }},
		{name: "agent allowlist excludes", skill: &Skill{Name: "s", Description: "d"}, eligible: true,
			policy: func(p Policy) Policy { p.Allow = []string{"other"}; return p },
			check:  func(s Status) bool { return s.BlockedByAgentFilter }},
		{name: "empty allowlist gives none", skill: &Skill{Name: "s", Description: "d"}, eligible: true,
			policy: func(p Policy) Policy { p.Allow = []string{}; return p }},
		{name: "allowlist includes", skill: &Skill{Name: "s", Description: "d"}, eligible: true, visible: true,
			policy: func(p Policy) Policy { p.Allow = []string{"s"}; return p }},
		{name: "hidden from the model", skill: &Skill{Name: "s", Description: "d", UserInvocable: true, DisableModelInvocation: true}, eligible: true,
			check: func(s Status) bool { return s.CommandVisible }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base
			if tt.policy != nil {
				p = tt.policy(p)
			}
			st := p.Status(tt.skill)
			if st.Eligible != tt.eligible || st.ModelVisible != tt.visible {
				t.Fatalf("eligible %v visible %v, want %v %v (%+v)", st.Eligible, st.ModelVisible, tt.eligible, tt.visible, st)
			}
			if tt.check != nil && !tt.check(st) {
				t.Fatalf("status %+v", st)
			}
		})
	}
}

func TestCatalog(t *testing.T) {
	if Section(nil, "read", 0) != "" {
		t.Fatal("a section without skills")
	}
	list := []*Skill{
		{Name: "a&b", Description: "uses <tags> & \"quotes\"", FilePath: "/w/skills/a/SKILL.md"},
		{Name: "long", Description: strings.Repeat("word ", 100), FilePath: "/w/skills/long/SKILL.md"},
	}
	full := Section(list, "read", 0)
	for _, want := range []string{"## Skills", "read exact <location> with `read`", "<available_skills>", "<name>a&amp;b</name>",
		"<description>uses &lt;tags&gt; &amp; &quot;quotes&quot;</description>", "<location>/w/skills/a/SKILL.md</location>", "</available_skills>"} {
		if !strings.Contains(full, want) {
			t.Errorf("section lacks %q:\n%s", want, full)
		}
	}
	// A tight budget shortens descriptions, then drops them, keeping every
	// name and location while they fit.
	short := Catalog(list, 900)
	if len(short) > 900 || !strings.Contains(short, "<name>long</name>") || !strings.Contains(short, "...</description>") || !strings.Contains(short, "skills check") {
		t.Errorf("budget 900 (%d chars):\n%s", len(short), short)
	}
	tiny := Catalog(list, 500)
	if strings.Contains(tiny, "<description>") || !strings.Contains(tiny, "<location>") {
		t.Errorf("budget 500:\n%s", tiny)
	}
}

// TestDiscoverReplaysUnchangedWalks: a root whose folders are unchanged is
// not walked again (its SKILL.md files are still stat'ed, and an edited one
// reparsed); a skill added or removed anywhere in the tree, a SKILL.md that
// stops loading, and a folder changed just now are seen on the next call.
func TestDiscoverReplaysUnchangedWalks(t *testing.T) {
	root := t.TempDir()
	past := time.Now().Add(-time.Hour)
	age := func(paths ...string) {
		t.Helper()
		past = past.Add(time.Second) // a new time for every change
		for _, p := range paths {
			if err := os.Chtimes(p, past, past); err != nil {
				t.Fatal(err)
			}
		}
	}
	var l Loader
	roots := []Root{{root, SourceWorkspace}}
	check := func(want []string, scans int) {
		t.Helper()
		got, _ := l.Discover(roots, nil)
		if !slices.Equal(Names(got), want) || l.scans != scans {
			t.Fatalf("skills %v after %d walks, want %v after %d", Names(got), l.scans, want, scans)
		}
	}
	x := writeSkill(t, filepath.Join(root, "x"), "x", "first")
	group := filepath.Join(root, "group")
	writeSkill(t, filepath.Join(group, "y"), "y", "nested")
	age(root, filepath.Join(root, "x"), group, filepath.Join(group, "y"))
	check([]string{"x", "y"}, 1)
	check([]string{"x", "y"}, 1)

	// An edited SKILL.md is reparsed without a walk.
	if err := os.WriteFile(x, []byte("---\nname: x\ndescription: second\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	age(x)
	got, _ := l.Discover(roots, nil)
	if byName(got)["x"].Description != "second" || l.scans != 1 {
		t.Fatalf("after the edit: %q after %d walks", byName(got)["x"].Description, l.scans)
	}

	// A skill added in a nested folder changes that folder.
	writeSkill(t, filepath.Join(group, "z"), "z", "added")
	age(group, filepath.Join(group, "z"))
	check([]string{"x", "y", "z"}, 2)
	check([]string{"x", "y", "z"}, 2)

	// A SKILL.md that stops loading is walked again and reported.
	if err := os.WriteFile(x, []byte("no front matter"), 0o644); err != nil {
		t.Fatal(err)
	}
	age(x)
	check([]string{"y", "z"}, 3)

	// A removed skill, and a folder changed just now (never replayed).
	if err := os.RemoveAll(filepath.Join(group, "y")); err != nil {
		t.Fatal(err)
	}
	check([]string{"z"}, 4)
	check([]string{"z"}, 5)
	writeSkill(t, filepath.Join(group, "w"), "w", "in the same tick")
	check([]string{"w", "z"}, 6)
}

// TestDiscoverReplayKeepsRefusals: a replayed walk refuses what the walk
// refused, and an allowed symlink target retargeted elsewhere is checked
// again.
func TestDiscoverReplayKeepsRefusals(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "skills")
	outside := filepath.Join(base, "outside")
	elsewhere := filepath.Join(base, "elsewhere")
	writeSkill(t, filepath.Join(root, "good"), "good", "fine")
	writeSkill(t, filepath.Join(outside, "escaped"), "escaped", "outside the root")
	if err := os.MkdirAll(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "escaped"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	trusted := filepath.Join(base, "trusted")
	if err := os.Symlink(outside, trusted); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	filepath.Walk(base, func(p string, _ os.FileInfo, _ error) error {
		return os.Chtimes(p, past, past)
	})
	var l Loader
	roots := []Root{{root, SourceWorkspace}}
	for i := range 2 {
		got, problems := l.Discover(roots, nil)
		if !slices.Equal(Names(got), []string{"good"}) || len(problems) != 1 || problems[0].Path != filepath.Join(root, "link") {
			t.Fatalf("call %d: %v, %v", i, Names(got), problems)
		}
		if got, _ = l.Discover(roots, []string{trusted}); !slices.Equal(Names(got), []string{"escaped", "good"}) {
			t.Fatalf("call %d, target trusted: %v", i, Names(got))
		}
	}
	if l.scans != 2 {
		t.Errorf("%d walks, want 2 (one per set of trusted targets)", l.scans)
	}
	if err := os.Remove(trusted); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, trusted); err != nil {
		t.Fatal(err)
	}
	if got, problems := l.Discover(roots, []string{trusted}); !slices.Equal(Names(got), []string{"good"}) || len(problems) != 1 {
		t.Fatalf("target retargeted: %v, %v", Names(got), problems)
	}
}

// TestDiscoverAbsentRootsStatTheirFolders: roots that do not exist cost a
// stat of the folder above them per call (one for roots that share it),
// and a root created later, or a skill put into it, is found on the next
// call. The Cache's clock runs an hour ahead: the creations are seen
// through the folders' stamps.
func TestDiscoverAbsentRootsStatTheirFolders(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "workspace")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	stats := 0
	var l Loader
	l.absent.StatFunc = func(p string) (fs.FileInfo, error) { stats++; return os.Stat(p) }
	l.absent.LstatFunc = func(p string) (fs.FileInfo, error) { stats++; return os.Lstat(p) }
	l.absent.NowFunc = func() time.Time { return time.Now().Add(time.Hour) }
	roots := []Root{
		{filepath.Join(ws, "skills"), SourceWorkspace},
		{filepath.Join(ws, ".agents", "skills"), SourceProject},
		{filepath.Join(base, "skills"), SourceManaged},
	}
	check := func(step string, want []string, maxStats int) {
		t.Helper()
		stats = 0
		got, _ := l.Discover(roots, nil)
		if !slices.Equal(Names(got), want) || (maxStats > 0 && stats > maxStats) {
			t.Fatalf("%s: skills %v after %d stats, want %v after at most %d", step, Names(got), stats, want, maxStats)
		}
	}
	check("cold", nil, 0)
	check("warm", nil, 2) // the workspace and base
	for i, r := range roots {
		name := fmt.Sprintf("s%d", i)
		if err := os.MkdirAll(r.Dir, 0o700); err != nil {
			t.Fatal(err)
		}
		check(r.Dir+" created", nil, 0)
		writeSkill(t, filepath.Join(r.Dir, name), name, "found")
		check(r.Dir+" given a skill", []string{name}, 0)
		if err := os.RemoveAll(r.Dir); err != nil {
			t.Fatal(err)
		}
		check(r.Dir+" removed", nil, 0)
	}
	if err := os.Remove(filepath.Join(ws, ".agents")); err != nil {
		t.Fatal(err)
	}
	check("all gone", nil, 0)
	check("warm again", nil, 2)
}
