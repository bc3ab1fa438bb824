package memory

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Bootstrap budgets, the reference's defaults
// (agents.defaults.bootstrapMaxChars, bootstrapTotalMaxChars) and its fixed
// USER.md cap. Characters are counted as runes.
const (
	DefaultBootstrapMaxChars      = 20000
	DefaultBootstrapTotalMaxChars = 60000
	UserBootstrapMaxChars         = 4000
	// minFileBudget is the least remaining total budget worth starting
	// another file with.
	minFileBudget = 64
	// minTrimmedContent is the least content a full truncation marker must
	// leave room for; below it the compact marker is used.
	minTrimmedContent = 16
)

// BootstrapFile is one file injected into the system prompt.
type BootstrapFile struct {
	// Name is the path relative to the workspace, e.g. "MEMORY.md".
	Name    string
	Content string
	// Truncated is set when Content is a cut copy of the file.
	Truncated bool
	// RawChars is the length of the file's trimmed content.
	RawChars int
}

// Budget is the bootstrap budget: MaxChars per file, TotalMaxChars across
// files (zero values are the defaults).
type Budget struct {
	MaxChars, TotalMaxChars int
}

// BuildBootstrap applies the budget to files in order as the reference's
// buildBootstrapContextFiles does: each file is cut to MaxChars (USER.md to
// at most UserBootstrapMaxChars) by TrimBootstrap, then to what remains of
// TotalMaxChars; once less than 64 characters remain no further file is
// added. Blank files are skipped.
func BuildBootstrap(files []BootstrapFile, b Budget) []BootstrapFile {
	maxChars := b.MaxChars
	if maxChars <= 0 {
		maxChars = DefaultBootstrapMaxChars
	}
	remaining := b.TotalMaxChars
	if remaining <= 0 {
		remaining = max(maxChars, DefaultBootstrapTotalMaxChars)
	}
	var out []BootstrapFile
	for _, f := range files {
		if remaining < minFileBudget {
			break
		}
		if strings.TrimSpace(f.Content) == "" {
			continue
		}
		budget := maxChars
		if path.Base(f.Name) == UserFile {
			budget = min(budget, UserBootstrapMaxChars)
		}
		content, truncated := TrimBootstrap(f.Content, f.Name, max(1, min(budget, remaining)))
		if n := utf8.RuneCountInString(content); n > remaining {
			content, truncated = clampToBudget(content, remaining), true
		}
		remaining -= utf8.RuneCountInString(content)
		out = append(out, BootstrapFile{Name: f.Name, Content: content, Truncated: truncated,
			RawChars: utf8.RuneCountInString(strings.TrimRight(f.Content, " \t\r\n"))})
	}
	return out
}

// TrimBootstrap returns content (right-trimmed) cut to maxChars as the
// reference cuts an over-long bootstrap file: 75% of the budget from the
// head, 25% from the tail, and between them the marker
// "[...truncated, read <name> for full content...]" with a
// "…(truncated <name>: kept H+T chars of N)…" line, or the compact
// "[…truncated H+T/N]" when the budget is too small for that.
func TrimBootstrap(content, name string, maxChars int) (string, bool) {
	trimmed := strings.TrimRight(content, " \t\r\n")
	total := utf8.RuneCountInString(trimmed)
	if total <= maxChars {
		return trimmed, false
	}
	full := func(h, t int) string {
		return fmt.Sprintf("\n[...truncated, read %s for full content...]\n…(truncated %s: kept %d+%d chars of %d)…\n", name, name, h, t, total)
	}
	compact := func(h, t int) string { return fmt.Sprintf("[…truncated %d+%d/%d]", h, t, total) }
	marker := full
	if m := full(0, 0); maxChars-utf8.RuneCountInString(m)-sepChars(1, 1, m) < minTrimmedContent {
		marker = compact
	}
	head, tail := 0, 0
	m := marker(head, tail)
	for range 3 {
		budget := max(0, maxChars-utf8.RuneCountInString(m)-sepChars(head, tail, m))
		nh, nt := budget*3/4, budget/4
		nm := marker(nh, nt)
		if nh == head && nt == tail && len(nm) == len(m) {
			break
		}
		head, tail, m = nh, nt, nm
	}
	length := func() int { return head + tail + utf8.RuneCountInString(m) + sepChars(head, tail, m) }
	for length() > maxChars && (tail > 0 || head > 0) {
		over := length() - maxChars
		if tail > 0 {
			tail = max(0, tail-over)
		} else {
			head = max(0, head-over)
		}
		m = marker(head, tail)
	}
	if head == 0 && tail == 0 && total > 0 {
		if one := marker(1, 0); 1+utf8.RuneCountInString(one)+sepChars(1, 0, one) <= maxChars {
			head, m = 1, one
		}
	}
	runes := []rune(trimmed)
	parts := []string{}
	if head > 0 {
		parts = append(parts, string(runes[:head]))
	}
	parts = append(parts, m)
	if tail > 0 {
		parts = append(parts, string(runes[total-tail:]))
	}
	sep := ""
	if strings.Contains(m, "\n") {
		sep = "\n"
	}
	out := strings.Join(parts, sep)
	if utf8.RuneCountInString(out) > maxChars {
		out = truncateRunes(out, maxChars)
	}
	return out, true
}

// sepChars counts the newlines joining head, marker and tail (none for the
// compact marker).
func sepChars(head, tail int, marker string) int {
	if !strings.Contains(marker, "\n") {
		return 0
	}
	n := 0
	if head > 0 {
		n++
	}
	if tail > 0 {
		n++
	}
	return n
}

// clampToBudget cuts s to budget runes, ending it with "…".
func clampToBudget(s string, budget int) string {
	if budget <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= budget {
		return s
	}
	if budget <= 3 {
		return truncateRunes(s, budget)
	}
	return truncateRunes(s, budget-1) + "…"
}

// ReadBootstrap reads the named files at the workspace root for
// BuildBootstrap; missing, linked and unreadable files are skipped.
func ReadBootstrap(workspace string, names ...string) []BootstrapFile {
	return ReadBootstrapLstat(os.Lstat, workspace, names...)
}

// ReadBootstrapLstat is ReadBootstrap with lstat in place of os.Lstat for
// the link checks (an fsstamp.View's, which skips files known absent).
func ReadBootstrapLstat(lstat func(string) (fs.FileInfo, error), workspace string, names ...string) []BootstrapFile {
	var out []BootstrapFile
	for _, n := range names {
		b, _, err := readFile(lstat, workspace, n)
		if err != nil {
			continue
		}
		out = append(out, BootstrapFile{Name: n, Content: string(b)})
	}
	return out
}

// DailyNotes reads the daily notes of the day before now and of now's day
// (in now's location), in that order: memory/YYYY-MM-DD.md and its slugged
// variants memory/YYYY-MM-DD-<slug>.md, each day's sorted by name. Links
// and unreadable files are skipped.
func DailyNotes(workspace string, now time.Time) []BootstrapFile {
	entries, err := os.ReadDir(filepath.Join(workspace, Dir))
	if err != nil {
		return nil
	}
	var out []BootstrapFile
	for _, day := range []time.Time{now.AddDate(0, 0, -1), now} {
		date := day.Format(time.DateOnly)
		var names []string
		for _, e := range entries {
			n := e.Name()
			if n == date+".md" || (strings.HasPrefix(n, date+"-") && strings.HasSuffix(n, ".md")) {
				names = append(names, Dir+"/"+n)
			}
		}
		sort.Strings(names)
		out = append(out, ReadBootstrap(workspace, names...)...)
	}
	return out
}
