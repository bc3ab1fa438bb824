package memory

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store/sqlite"
)

func openIndex(t testing.TB) (*Index, *sqlite.Store) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "db.sqlite"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return NewIndex(st), st
}

func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestIsMemoryPath(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"MEMORY.md", true},
		{"USER.md", true},
		{"DREAMS.md", true},
		{"dreams.md", true},
		{"memory/2026-01-01.md", true},
		{"memory/sub/x.md", true},
		{"memory/x.txt", false},
		{"memory/../AGENTS.md", false},
		{"AGENTS.md", false},
		{"memory.md", false},
		{"../MEMORY.md", false},
		{"/MEMORY.md", false},
		{"memory\\x.md", false},
		{"./MEMORY.md", false},
		{"", false},
		{"memory/", false},
	} {
		if got := IsMemoryPath(tc.path); got != tc.want {
			t.Errorf("IsMemoryPath(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}

func TestQueryTerms(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want string
	}{
		{"Deploy key?", "deploy|key"},
		{"  ", ""},
		{"foo foo FOO", "foo"},
		{"東京タワー", "東 京 タ ワ ー"},
		{"meet 東京 friends", "meet|東 京|friends"},
		{"abc東京", "abc 東 京"},
		{"snake_case v2.1", "snake_case|v2|1"},
		{`"quoted" AND (x OR y)*`, "quoted|and|x|or|y"},
		{"서울 여행", "서 울|여 행"},
	} {
		var parts []string
		for _, term := range QueryTerms(tc.q) {
			parts = append(parts, strings.Join(term, " "))
		}
		if got := strings.Join(parts, "|"); got != tc.want {
			t.Errorf("QueryTerms(%q) = %q, want %q", tc.q, got, tc.want)
		}
	}
	long := strings.Repeat("w ", 10) + strings.Repeat("x", 3)
	for i := range 40 {
		long += " t" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	if n := len(QueryTerms(long)); n != MaxQueryTerms {
		t.Errorf("QueryTerms kept %d terms, want %d", n, MaxQueryTerms)
	}
}

func TestChunkMarkdown(t *testing.T) {
	if c := ChunkMarkdown(" \n\n"); c != nil {
		t.Fatalf("blank content gave %v", c)
	}
	c := ChunkMarkdown("# Title\n\nline three\n")
	if len(c) != 1 || c[0].StartLine != 1 || c[0].EndLine != 3 || c[0].Text != "# Title\n\nline three" {
		t.Fatalf("small file: %+v", c)
	}
	// 100 lines of 50 characters: chunks of ~1600 characters overlapping by ~320.
	var lines []string
	for i := range 100 {
		lines = append(lines, strings.Repeat(string(rune('a'+i%26)), 49))
	}
	c = ChunkMarkdown(strings.Join(lines, "\n"))
	if len(c) < 3 {
		t.Fatalf("got %d chunks", len(c))
	}
	for i, ch := range c {
		if n := len([]rune(ch.Text)); n > ChunkChars {
			t.Errorf("chunk %d is %d chars", i, n)
		}
		if i > 0 {
			overlap := c[i-1].EndLine - ch.StartLine + 1
			if overlap < 1 || overlap*50 > OverlapChars {
				t.Errorf("chunk %d starts at %d after %d: overlap %d lines", i, ch.StartLine, c[i-1].EndLine, overlap)
			}
		}
	}
	if last := c[len(c)-1]; last.EndLine != 100 {
		t.Errorf("last chunk ends at %d", last.EndLine)
	}
	// One over-long line is cut into pieces that keep its line number.
	c = ChunkMarkdown(strings.Repeat("x", ChunkChars*2+10))
	if len(c) != 3 || c[0].StartLine != 1 || c[2].EndLine != 1 {
		t.Fatalf("long line: %d chunks %+v", len(c), c[0].StartLine)
	}
}

func FuzzChunkMarkdown(f *testing.F) {
	f.Add("# a\n\nb\n")
	f.Add(strings.Repeat("東京 ", 1000))
	f.Add("\xff\xfe\n\n" + strings.Repeat("x", 3000))
	f.Fuzz(func(t *testing.T, s string) {
		total := strings.Count(s, "\n") + 1
		prevStart := 0
		for _, c := range ChunkMarkdown(s) {
			if c.StartLine < 1 || c.EndLine < c.StartLine || c.EndLine > total || c.StartLine < prevStart {
				t.Fatalf("bad range %d-%d of %d lines", c.StartLine, c.EndLine, total)
			}
			if len([]rune(c.Text)) > ChunkChars+ChunkChars/4 {
				t.Fatalf("chunk of %d runes", len([]rune(c.Text)))
			}
			if !strings.Contains(s, c.Text) && !strings.Contains(strings.ReplaceAll(s, "\r", ""), strings.ReplaceAll(c.Text, "\r", "")) {
				t.Fatalf("chunk text not from the input")
			}
			prevStart = c.StartLine
		}
		_ = QueryTerms(s)
		_ = SearchText(s)
	})
}

func TestTrimBootstrap(t *testing.T) {
	if got, cut := TrimBootstrap("short\n\n", "MEMORY.md", 100); got != "short" || cut {
		t.Fatalf("short: %q %v", got, cut)
	}
	long := strings.Repeat("h", 600) + strings.Repeat("t", 400)
	got, cut := TrimBootstrap(long, "MEMORY.md", 200)
	if !cut || len([]rune(got)) > 200 {
		t.Fatalf("cut=%v len=%d", cut, len([]rune(got)))
	}
	if !strings.Contains(got, "[...truncated, read MEMORY.md for full content...]") ||
		!strings.Contains(got, "…(truncated MEMORY.md: kept ") || !strings.HasPrefix(got, "hhh") || !strings.HasSuffix(got, "ttt") {
		t.Fatalf("marker or head/tail missing: %q", got)
	}
	// The reference's numbers for a 1000-char file at 200: kept 75%/25% of what the marker leaves.
	if !strings.Contains(got, "chars of 1000)…") {
		t.Fatalf("original length not stated: %q", got)
	}
	got, _ = TrimBootstrap(long, "MEMORY.md", 40)
	if !strings.Contains(got, "[…truncated ") || len([]rune(got)) > 40 {
		t.Fatalf("compact marker: %q", got)
	}
}

func TestBuildBootstrapBudgets(t *testing.T) {
	files := []BootstrapFile{
		{Name: "AGENTS.md", Content: strings.Repeat("a", 30)},
		{Name: "USER.md", Content: strings.Repeat("u", 5000)},
		{Name: "MEMORY.md", Content: strings.Repeat("m", 25000)},
		{Name: "SOUL.md", Content: "   "},
	}
	out := BuildBootstrap(files, Budget{})
	if len(out) != 3 {
		t.Fatalf("got %d files", len(out))
	}
	if n := len([]rune(out[1].Content)); !out[1].Truncated || n > UserBootstrapMaxChars {
		t.Errorf("USER.md: %d chars, truncated %v", n, out[1].Truncated)
	}
	if n := len([]rune(out[2].Content)); !out[2].Truncated || n > DefaultBootstrapMaxChars || out[2].RawChars != 25000 {
		t.Errorf("MEMORY.md: %d chars, truncated %v, raw %d", n, out[2].Truncated, out[2].RawChars)
	}
	// The total budget cuts the last file and stops further ones.
	out = BuildBootstrap([]BootstrapFile{
		{Name: "A.md", Content: strings.Repeat("a", 90)},
		{Name: "MEMORY.md", Content: strings.Repeat("m", 90)},
		{Name: "B.md", Content: "b"},
	}, Budget{MaxChars: 100, TotalMaxChars: 160})
	if len(out) != 2 || len([]rune(out[1].Content)) > 70 || !out[1].Truncated || !strings.Contains(out[1].Content, "truncated") {
		t.Fatalf("total budget: %+v", out)
	}
	// Under 64 characters left, no further file starts.
	out = BuildBootstrap([]BootstrapFile{
		{Name: "A.md", Content: strings.Repeat("a", 90)},
		{Name: "MEMORY.md", Content: "m"},
	}, Budget{MaxChars: 100, TotalMaxChars: 150})
	if len(out) != 1 {
		t.Fatalf("file started with 60 chars left: %+v", out)
	}
}

func TestDailyNotes(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	writeFile(t, dir, "memory/2026-11-27.md", "today")
	writeFile(t, dir, "memory/2026-11-27-standup.md", "today slug")
	writeFile(t, dir, "memory/2026-11-26.md", "yesterday")
	writeFile(t, dir, "memory/2026-11-25.md", "older")
	var got []string
	for _, f := range DailyNotes(dir, now) {
		got = append(got, f.Name+"="+f.Content)
	}
	want := "memory/2026-11-26.md=yesterday,memory/2026-11-27-standup.md=today slug,memory/2026-11-27.md=today"
	if strings.Join(got, ",") != want {
		t.Fatalf("DailyNotes = %v, want %s", got, want)
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	for i := 1; i <= 200; i++ {
		lines = append(lines, "line "+strings.Repeat("x", i%7))
	}
	writeFile(t, dir, "memory/notes.md", strings.Join(lines, "\n")+"\n")
	writeFile(t, dir, "AGENTS.md", "secret rules")
	writeFile(t, dir, "MEMORY.md", "one\ntwo\nthree\n")

	r, err := Read(dir, "MEMORY.md", 2, 1)
	if err != nil || r.Status != "ok" || r.Text != "two\n\n[More content available. Use from=3 to continue.]" || r.NextFrom != 3 || !r.Truncated || *r.Lines != 1 {
		t.Fatalf("MEMORY.md 2+1: %+v %v", r, err)
	}
	r, _ = Read(dir, filepath.Join(dir, "MEMORY.md"), 0, 0)
	if r.Status != "ok" || r.Text != "one\ntwo\nthree" || r.Truncated || r.Path != "MEMORY.md" {
		t.Fatalf("absolute path: %+v", r)
	}
	r, _ = Read(dir, "memory/notes.md", 0, 0)
	if r.Status != "ok" || *r.Lines != DefaultReadLines || r.NextFrom != 121 {
		t.Fatalf("default excerpt: lines %d next %d", *r.Lines, r.NextFrom)
	}
	r, _ = Read(dir, "memory/missing.md", 0, 0)
	if r.Status != "not_found" || r.Path != "memory/missing.md" {
		t.Fatalf("missing: %+v", r)
	}
	for _, p := range []string{"AGENTS.md", "../x/MEMORY.md", "memory/../AGENTS.md", "/etc/passwd", "memory/notes.txt"} {
		r, err := Read(dir, p, 0, 0)
		if err != nil || r.Status != "error" || r.Code != "MEMORY_PATH_NOT_ALLOWED" || r.Text != "" {
			t.Errorf("Read(%q) = %+v, %v; want a MEMORY_PATH_NOT_ALLOWED error", p, r, err)
		}
	}
	if _, err := Read(dir, "  ", 0, 0); err == nil || err.Error() != "path required" {
		t.Fatalf("blank path: %v", err)
	}
	// A link inside memory/ to a file outside, and a hard link, are refused.
	outside := filepath.Join(t.TempDir(), "secret.md")
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "memory", "link.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(dir, "memory", "hard.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(dir, "memory", "dir")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"memory/link.md", "memory/hard.md", "memory/dir/secret.md"} {
		r, _ := Read(dir, p, 0, 0)
		if r.Status != "error" || strings.Contains(r.Text, "secret") {
			t.Errorf("Read(%q) = %+v; want refused", p, r)
		}
	}
	// Over-long single line: cut with the read-fallback hint.
	writeFile(t, dir, "memory/wide.md", strings.Repeat("w", ReadMaxChars+10))
	r, _ = Read(dir, "memory/wide.md", 0, 0)
	if !r.Truncated || r.NextFrom != 0 || !strings.HasSuffix(r.Text, "If you need the full raw line, use read on the source file.]") {
		t.Fatalf("wide line: truncated %v next %d tail %q", r.Truncated, r.NextFrom, r.Text[len(r.Text)-80:])
	}
}

func TestIndexSyncAndSearch(t *testing.T) {
	ctx := context.Background()
	idx, _ := openIndex(t)
	dir := t.TempDir()
	writeFile(t, dir, "MEMORY.md", "# Memory\nThe staging database password rotates every Friday.\n")
	writeFile(t, dir, "memory/2026-11-26.md", "Met Alice about the Kyoto trip.\n東京で会議があります。\n")
	writeFile(t, dir, "AGENTS.md", "Friday rules are not memory")
	st, err := idx.Sync(ctx, "main", dir)
	if err != nil || st.Files != 2 || st.Indexed != 2 {
		t.Fatalf("first sync: %+v %v", st, err)
	}
	if st, _ := idx.Sync(ctx, "main", dir); st.Unchanged != 2 || st.Indexed != 0 {
		t.Fatalf("second sync re-indexed: %+v", st)
	}
	hits, err := idx.Search(ctx, "main", dir, "Friday password", 0, 0)
	if err != nil || len(hits) != 1 || hits[0].Path != "MEMORY.md" || hits[0].StartLine != 1 || hits[0].EndLine != 2 || hits[0].Source != "memory" {
		t.Fatalf("search: %+v %v", hits, err)
	}
	if hits[0].Score <= 0 || hits[0].Score >= 1 {
		t.Fatalf("score %v", hits[0].Score)
	}
	// CJK: a two-character word inside a sentence with no spaces.
	if hits, _ := idx.Search(ctx, "main", dir, "東京", 0, 0); len(hits) != 1 || hits[0].Path != "memory/2026-11-26.md" {
		t.Fatalf("CJK search: %+v", hits)
	}
	if hits, _ := idx.Search(ctx, "main", dir, "京東", 0, 0); len(hits) != 0 {
		t.Fatalf("reversed CJK matched: %+v", hits)
	}
	// A changed file is re-indexed on the next search; a removed one drops out.
	writeFile(t, dir, "memory/2026-11-26.md", "Met Bob about the Osaka trip, much longer now.\n")
	if hits, _ := idx.Search(ctx, "main", dir, "Osaka", 0, 0); len(hits) != 1 {
		t.Fatalf("changed file not re-indexed: %+v", hits)
	}
	if hits, _ := idx.Search(ctx, "main", dir, "Kyoto", 0, 0); len(hits) != 0 {
		t.Fatalf("old content still found: %+v", hits)
	}
	if err := os.Remove(filepath.Join(dir, "MEMORY.md")); err != nil {
		t.Fatal(err)
	}
	if hits, _ := idx.Search(ctx, "main", dir, "password", 0, 0); len(hits) != 0 {
		t.Fatalf("removed file still found: %+v", hits)
	}
	// Scopes are separate; a link into memory/ is not indexed.
	if hits, _ := idx.Search(ctx, "other", t.TempDir(), "Osaka", 0, 0); len(hits) != 0 {
		t.Fatalf("other scope sees main's notes: %+v", hits)
	}
	outside := filepath.Join(t.TempDir(), "x.md")
	writeFile(t, filepath.Dir(outside), "x.md", "zanzibar secret")
	if err := os.Symlink(outside, filepath.Join(dir, "memory", "link.md")); err != nil {
		t.Fatal(err)
	}
	if hits, _ := idx.Search(ctx, "main", dir, "zanzibar", 0, 0); len(hits) != 0 {
		t.Fatalf("linked file indexed: %+v", hits)
	}
	// minScore filters; maxResults caps.
	for i := range 10 {
		writeFile(t, dir, "memory/n"+string(rune('a'+i))+".md", "recurring topic")
	}
	if hits, _ := idx.Search(ctx, "main", dir, "recurring", 3, 0); len(hits) != 3 {
		t.Fatalf("maxResults 3: %d hits", len(hits))
	}
	if hits, _ := idx.Search(ctx, "main", dir, "recurring", 0, 0); len(hits) != DefaultMaxResults {
		t.Fatalf("default maxResults: %d hits", len(hits))
	}
	if hits, _ := idx.Search(ctx, "main", dir, "recurring", 0, 0.9999); len(hits) != 0 {
		t.Fatalf("minScore: %d hits", len(hits))
	}
	if hits, err := idx.Search(ctx, "main", dir, "?!", 0, 0); err != nil || len(hits) != 0 {
		t.Fatalf("no terms: %v %v", hits, err)
	}
}

func TestSearchMissingWorkspace(t *testing.T) {
	idx, _ := openIndex(t)
	hits, err := idx.Search(context.Background(), "main", filepath.Join(t.TempDir(), "nope"), "x", 0, 0)
	if err != nil || len(hits) != 0 {
		t.Fatalf("missing workspace: %v %v", hits, err)
	}
}

func TestSearchText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ORCA-7731, eu-west.", "ORCA 7731 eu west"},
		{"東京で会議", "東 京 で 会 議"},
		{"abc東京def", "abc 東 京 def"},
		{"  snake_case  v2.1 ", "snake_case v2 1"},
		{"café naïve", "café naïve"},
		{"---", ""},
	} {
		if got := SearchText(tc.in); got != tc.want {
			t.Errorf("SearchText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzExcerptAndTrim(f *testing.F) {
	f.Add("a\nb\nc\n", 2, 1, 50)
	f.Add(strings.Repeat("東京\n", 300), 0, 0, 100)
	f.Add("\xff\n\n\r\n", 3, 7, 1)
	f.Fuzz(func(t *testing.T, content string, from, lines, budget int) {
		if budget < 1 || budget > 1<<16 {
			return
		}
		r := excerpt("memory/x.md", content, from, lines, budget)
		if r.Status != "ok" || r.Lines == nil || *r.Lines < 0 {
			t.Fatalf("excerpt = %+v", r)
		}
		if r.NextFrom != 0 && r.NextFrom != r.From+*r.Lines {
			t.Fatalf("nextFrom %d after from %d + %d lines", r.NextFrom, r.From, *r.Lines)
		}
		got, cut := TrimBootstrap(content, "MEMORY.md", budget)
		if n := len([]rune(got)); n > budget {
			t.Fatalf("TrimBootstrap gave %d runes over a budget of %d", n, budget)
		}
		if !cut && got != strings.TrimRight(content, " \t\r\n") {
			t.Fatalf("uncut content changed")
		}
	})
}
