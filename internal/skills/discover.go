package skills

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard/internal/fsstamp"
)

// Root is one directory skills are discovered under.
type Root struct {
	Dir    string
	Source Source
}

// Loader discovers skills. It keeps each parsed SKILL.md until the file's
// size or modification time changes, and each root's walk (the folders it
// looked into, what they held) until a stat of one of them shows a change,
// so a call per turn stats what it found and rereads only what was edited;
// a folder found absent (a root, an allowed target) is not stat'ed again
// while the folder above it is unchanged (fsstamp). A Loader is safe for
// concurrent use.
type Loader struct {
	absent fsstamp.Cache // the folders found absent

	mu    sync.Mutex
	cache map[string]cached
	walks map[walkKey]*walk
	scans int // walks made (not replayed), for tests
}

// walkKey names one root's walk: the folder, its source and the allowed
// symlink targets it was checked against.
type walkKey struct {
	dir    string
	source Source
	allow  string
}

// walk is what scanning one root found: the stats that show it is still
// current, and the candidate SKILL.md files and refused folders in scan
// order.
type walk struct {
	stamps []stamp
	steps  []walkStep
}

// stamp is a stat of a folder the walk depended on (fi nil: it failed).
type stamp struct {
	path string
	fi   os.FileInfo
}

// walkStep is a refused folder (problem set) or a candidate SKILL.md and
// whether it loaded when walked.
type walkStep struct {
	problem *Problem
	md, dir string
	loaded  bool
}

// racyWindow is how old a folder's modification time must be for a walk
// through it to be kept: file systems stamp changes with a coarse clock (a
// few milliseconds on Linux, 2 s on FAT), and a skill added in the tick of
// the walk would look like no change to a stat.
const racyWindow = 2 * time.Second

// maxWalks bounds the kept walks (roots of agents and of reloaded configs).
const maxWalks = 64

// current reports whether the stats of w's folders, taken through v, are
// unchanged and old enough to trust.
func (w *walk) current(v *fsstamp.View) bool {
	for _, st := range w.stamps {
		fi, err := v.Stat(st.path)
		if (err != nil) != (st.fi == nil) {
			return false
		}
		if err == nil && !sameVersion(st.fi, fi) {
			return false
		}
	}
	return true
}

// sameVersion reports whether two stats of a path show the same file,
// unchanged.
func sameVersion(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) && a.Mode() == b.Mode()
}

// replay redoes w's loads (each SKILL.md is stat'ed and reparsed when
// edited); ok is false when one now loads where it failed or fails where
// it loaded, which changes where the scan stops: the root is walked again.
func (l *Loader) replay(w *walk, r Root, live map[string]bool) (skills []*Skill, problems []Problem, ok bool) {
	for _, st := range w.steps {
		if st.problem != nil {
			problems = append(problems, *st.problem)
			continue
		}
		fi, err := os.Lstat(st.md)
		if err != nil {
			return nil, nil, false
		}
		live[st.md] = true
		s, err := l.load(st.md, st.dir, fi)
		if (err == nil) != st.loaded {
			return nil, nil, false
		}
		if err != nil {
			problems = append(problems, Problem{Path: st.md, Message: err.Error()})
			continue
		}
		c := *s
		c.Source = r.Source
		skills = append(skills, &c)
	}
	return skills, problems, true
}

type cached struct {
	size  int64
	mtime time.Time
	skill *Skill
	err   error
}

// Discover returns the skills under roots (highest precedence first): a
// name found in several roots is the first root's. A skill folder that is
// a symlink must resolve inside its root or into one of allowTargets
// (skills.load.allowSymlinkTargets). Refused files are returned as
// problems; their valid siblings still load.
func (l *Loader) Discover(roots []Root, allowTargets []string) ([]*Skill, []Problem) {
	v := l.absent.View()
	return l.discover(&v, roots, allowTargets)
}

// discover is Discover with the folders' stats taken through v.
func (l *Loader) discover(v *fsstamp.View, roots []Root, allowTargets []string) ([]*Skill, []Problem) {
	var out []*Skill
	var problems []Problem
	seen := map[string]bool{}
	live := map[string]bool{}
	for _, r := range roots {
		found, probs := l.scan(v, r, allowTargets, live)
		problems = append(problems, probs...)
		for _, s := range found {
			if seen[s.Name] {
				continue
			}
			seen[s.Name] = true
			out = append(out, s)
		}
	}
	l.mu.Lock()
	for p := range l.cache {
		if !live[p] {
			delete(l.cache, p)
		}
	}
	l.mu.Unlock()
	return out, problems
}

// scan finds the SKILL.md files under one root: a folder holding one is a
// skill and is not looked into further; hidden folders and node_modules
// are skipped.
func (l *Loader) scan(v *fsstamp.View, r Root, allowTargets []string, live map[string]bool) ([]*Skill, []Problem) {
	if r.Dir == "" {
		return nil, nil
	}
	key := walkKey{dir: r.Dir, source: r.Source, allow: strings.Join(allowTargets, "\x00")}
	l.mu.Lock()
	w := l.walks[key]
	l.mu.Unlock()
	if w != nil && w.current(v) {
		if skills, problems, ok := l.replay(w, r, live); ok {
			return skills, problems
		}
	}
	skills, problems, w := l.walk(v, r, allowTargets, live)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.scans++
	if w == nil {
		delete(l.walks, key)
		return skills, problems
	}
	if l.walks == nil || len(l.walks) >= maxWalks {
		l.walks = map[walkKey]*walk{}
	}
	l.walks[key] = w
	return skills, problems
}

// walk scans one root and returns what it found with the walk to replay
// (nil when a folder it went through changed too recently to trust a
// stat of it).
func (l *Loader) walk(v *fsstamp.View, r Root, allowTargets []string, live map[string]bool) ([]*Skill, []Problem, *walk) {
	w := &walk{}
	stampOf := func(path string) {
		fi, err := v.Stat(path)
		if err != nil {
			fi = nil
		}
		w.stamps = append(w.stamps, stamp{path: path, fi: fi})
	}
	stampOf(r.Dir)
	for _, t := range allowTargets {
		stampOf(t)
	}
	skills, problems := l.walkRoot(r, allowTargets, live, w, stampOf)
	for _, st := range w.stamps {
		if st.fi != nil && time.Since(st.fi.ModTime()) <= racyWindow {
			return skills, problems, nil
		}
	}
	return skills, problems, w
}

// walkRoot is walk's scan, recording its steps in w and a stat of every
// folder it examines.
func (l *Loader) walkRoot(r Root, allowTargets []string, live map[string]bool, w *walk, stampOf func(string)) ([]*Skill, []Problem) {
	rootReal, err := filepath.EvalSymlinks(r.Dir)
	if err != nil {
		return nil, nil // an absent root has no skills
	}
	if fi, err := os.Stat(rootReal); err != nil || !fi.IsDir() {
		return nil, nil
	}
	type item struct {
		dir   string
		depth int
	}
	var skills []*Skill
	var problems []Problem
	queue := []item{{r.Dir, 0}}
	examined := 0
	for len(queue) > 0 && examined < MaxCandidatesPerRoot && len(skills) < MaxSkillsPerSource {
		it := queue[0]
		queue = queue[1:]
		examined++
		if it.depth > 0 {
			stampOf(it.dir)
			if err := contained(rootReal, it.dir, allowTargets); err != nil {
				p := Problem{Path: it.dir, Message: err.Error()}
				problems = append(problems, p)
				w.steps = append(w.steps, walkStep{problem: &p})
				continue
			}
		}
		md := filepath.Join(it.dir, "SKILL.md")
		if fi, err := os.Lstat(md); err == nil && it.depth == 0 {
			// A SKILL.md right in the root is not a skill folder; the
			// folders beside it still are.
			p := Problem{Path: md, Message: "SKILL.md must be in a folder of its own under the skills directory"}
			problems = append(problems, p)
			w.steps = append(w.steps, walkStep{problem: &p})
		} else if err == nil {
			live[md] = true
			s, err := l.load(md, it.dir, fi)
			w.steps = append(w.steps, walkStep{md: md, dir: it.dir, loaded: err == nil})
			if err != nil {
				problems = append(problems, Problem{Path: md, Message: err.Error()})
				continue
			}
			c := *s
			c.Source = r.Source
			skills = append(skills, &c)
			continue
		}
		if it.depth >= MaxDepth {
			continue
		}
		entries, err := os.ReadDir(it.dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") || name == "node_modules" {
				continue
			}
			if e.IsDir() || e.Type()&os.ModeSymlink != 0 {
				queue = append(queue, item{filepath.Join(it.dir, name), it.depth + 1})
			}
		}
	}
	return skills, problems
}

// contained refuses a folder whose real path leaves the root (a symlink
// out), unless it resolves into an allowed symlink target.
func contained(rootReal, dir string, allowTargets []string) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("cannot resolve: %v", err)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return fmt.Errorf("not a directory")
	}
	if within(rootReal, real) {
		return nil
	}
	for _, t := range allowTargets {
		if tr, err := filepath.EvalSymlinks(t); err == nil && within(tr, real) {
			return nil
		}
	}
	return fmt.Errorf("resolves to %s, outside its skills directory (skills.load.allowSymlinkTargets trusts a target)", real)
}

// within reports whether path is dir or below it.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// load parses md (fi is its Lstat), from the cache when unchanged. The
// file must be a regular file whose real path stays in its folder.
func (l *Loader) load(md, dir string, fi os.FileInfo) (*Skill, error) {
	if !fi.Mode().IsRegular() {
		real, err := filepath.EvalSymlinks(md)
		if err != nil {
			return nil, fmt.Errorf("cannot resolve: %v", err)
		}
		dirReal, err := filepath.EvalSymlinks(dir)
		if err != nil || !within(dirReal, real) {
			return nil, fmt.Errorf("SKILL.md resolves to %s, outside its skill folder", real)
		}
		if fi, err = os.Stat(real); err != nil || !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("SKILL.md is not a regular file")
		}
	}
	if fi.Size() > MaxFileBytes {
		return nil, fmt.Errorf("SKILL.md is %d bytes, over the limit of %d", fi.Size(), MaxFileBytes)
	}
	l.mu.Lock()
	c, ok := l.cache[md]
	l.mu.Unlock()
	if ok && c.size == fi.Size() && c.mtime.Equal(fi.ModTime()) {
		return c.skill, c.err
	}
	s, err := readSkill(md, dir)
	l.mu.Lock()
	if l.cache == nil {
		l.cache = map[string]cached{}
	}
	l.cache[md] = cached{size: fi.Size(), mtime: fi.ModTime(), skill: s, err: err}
	l.mu.Unlock()
	return s, err
}

// readSkill reads and parses md, reading at most one byte past the limit
// (the file may grow between the stat and the read).
func readSkill(md, dir string) (*Skill, error) {
	f, err := os.Open(md)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return Parse(b, abs)
}

// Names returns the skills' names, sorted.
func Names(list []*Skill) []string {
	out := make([]string, 0, len(list))
	for _, s := range list {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}
