package approval

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// File names in the state directory.
const (
	// PendingFile journals the pending approvals.
	PendingFile = "exec-approvals-pending.json"
	// AllowlistFile is the approvals document with the per-agent
	// allowlists (the reference's exec-approvals.json shape).
	AllowlistFile = "exec-approvals.json"
)

// writeFileAtomic writes b to path through a synced temporary file and a
// rename, so that a crash leaves the old or the new content.
func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// FileJournal is a Journal in one JSON file.
type FileJournal struct{ Path string }

var _ Journal = FileJournal{}

// Save implements Journal.
func (j FileJournal) Save(pending []Record) error {
	if pending == nil {
		pending = []Record{}
	}
	b, err := json.MarshalIndent(map[string]any{"version": 1, "pending": pending}, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(j.Path, b)
}

// Load returns the approvals the file holds (none when it is absent).
func (j FileJournal) Load() ([]Record, error) {
	b, err := os.ReadFile(j.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("approval.FileJournal.Load: %w", err)
	}
	var doc struct {
		Pending []Record `json:"pending"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("approval.FileJournal.Load: %s: %w", j.Path, err)
	}
	return doc.Pending, nil
}

// AllowEntry is one allowlist entry.
type AllowEntry struct {
	ID      string `json:"id,omitempty"`
	Pattern string `json:"pattern"`
	// Source is "allow-always" for entries an approval added.
	Source           string `json:"source,omitempty"`
	LastUsedAt       int64  `json:"lastUsedAt,omitempty"`
	LastUsedCommand  string `json:"lastUsedCommand,omitempty"`
	LastResolvedPath string `json:"lastResolvedPath,omitempty"`
	// ResolvedSHA256 binds an allow-always entry to the executable it
	// approved: the entry matches only while the command resolves to
	// LastResolvedPath and that file still has this content hash, so
	// replacing the binary (or shadowing it on PATH) asks again.
	ResolvedSHA256 string `json:"resolvedSha256,omitempty"`
}

type allowDoc struct {
	Version  int                  `json:"version"`
	Defaults *docPolicy           `json:"defaults,omitempty"`
	Agents   map[string]agentList `json:"agents"`
}

// docPolicy is a policy in the approvals document: the defaults, or an
// agent's own. Empty fields leave the decision to the next level.
type docPolicy struct {
	Security        string `json:"security,omitempty"`
	Ask             string `json:"ask,omitempty"`
	AskFallback     string `json:"askFallback,omitempty"`
	AutoAllowSkills *bool  `json:"autoAllowSkills,omitempty"`
}

type agentList struct {
	docPolicy
	Allowlist []AllowEntry `json:"allowlist"`
}

// Allowlists are the per-agent allowlists, kept in the approvals document
// file. Safe for concurrent use.
type Allowlists struct {
	path string
	now  func() time.Time

	// mu guards doc and digests.
	mu  sync.Mutex
	doc allowDoc
	// digests caches executables' content hashes by path, valid while
	// the file's identity, size and modification time stay the same.
	digests map[string]digest
}

type digest struct {
	id  string // device, inode, size and mtime
	sum string
}

// digestLocked returns the SHA-256 of the file at path, "" when it cannot
// be read.
func (a *Allowlists) digestLocked(path string) string {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	id := fileIdentity(fi)
	if d, ok := a.digests[path]; ok && d.id == id {
		return d.sum
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if a.digests == nil {
		a.digests = map[string]digest{}
	}
	a.digests[path] = digest{id: id, sum: sum}
	return sum
}

// OpenAllowlists reads the approvals document at path (absent: empty).
func OpenAllowlists(path string) (*Allowlists, error) {
	a := &Allowlists{path: path, now: time.Now, doc: allowDoc{Version: 1, Agents: map[string]agentList{}}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return a, nil
	}
	if err != nil {
		return nil, fmt.Errorf("approval.OpenAllowlists: %w", err)
	}
	if err := json.Unmarshal(b, &a.doc); err != nil {
		return nil, fmt.Errorf("approval.OpenAllowlists: %s: %w", path, err)
	}
	if a.doc.Agents == nil {
		a.doc.Agents = map[string]agentList{}
	}
	return a, nil
}

// List returns agent's allowlist.
func (a *Allowlists) List(agent string) []AllowEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.doc.Agents[agent].Allowlist)
}

// Matches reports whether bin (an executable as written in a command run
// in cwd) is on agent's allowlist. A pattern with a slash is a path glob
// matched against the resolved executable; a bare pattern is a name glob
// matched only by commands invoked through PATH.
func (a *Allowlists) Matches(agent, bin, cwd string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	resolved := ""
	resolve := func() string {
		if resolved == "" {
			resolved = ResolvePath(bin, cwd)
		}
		return resolved
	}
	for _, e := range a.doc.Agents[agent].Allowlist {
		pat := strings.ToLower(strings.TrimSpace(e.Pattern))
		if !strings.Contains(pat, "/") {
			if strings.Contains(bin, "/") || !globMatch(pat, strings.ToLower(bin)) {
				continue
			}
		} else if !globMatch(expandHome(pat), strings.ToLower(resolve())) {
			continue
		}
		if e.ResolvedSHA256 != "" && (resolve() != e.LastResolvedPath || a.digestLocked(resolved) != e.ResolvedSHA256) {
			continue // approved for another file than the one that would run
		}
		return true
	}
	return false
}

// globMatch matches name against pattern, where ** also crosses slashes.
func globMatch(pattern, name string) bool {
	if strings.Contains(pattern, "**") {
		pattern = strings.ReplaceAll(pattern, "**", "*")
		ok, _ := filepath.Match(strings.ReplaceAll(pattern, "/", "\x00"), strings.ReplaceAll(name, "/", "\x00"))
		return ok
	}
	ok, _ := filepath.Match(pattern, name)
	return ok
}

func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, rest)
		}
	}
	return p
}

// ResolvePath returns the executable bin runs in cwd (PATH lookup for a
// bare name, relative to cwd for a relative path), or bin itself when it
// cannot be found.
func ResolvePath(bin, cwd string) string {
	if strings.Contains(bin, "/") && !filepath.IsAbs(bin) && cwd != "" {
		bin = filepath.Join(cwd, bin)
	}
	p, err := exec.LookPath(bin)
	if err != nil {
		return bin
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	return p
}

// Add adds bins (executables as written in command, run in cwd) to agent's
// allowlist as allow-always entries and saves the document. A bare name is
// kept as a name pattern; a path becomes the absolute path of the
// executable, so that "./build.sh" approved in one directory does not
// allow another directory's. Entries already present are kept.
func (a *Allowlists) Add(agent string, bins []string, command, cwd string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.doc.Agents[agent]
	now := a.now().UnixMilli()
	changed := false
	for _, bin := range bins {
		resolved := ResolvePath(bin, cwd)
		pattern := bin
		if strings.Contains(bin, "/") {
			pattern = resolved
			if !filepath.IsAbs(pattern) {
				continue // not found: nothing to bind an entry to
			}
		}
		if bin == "" {
			continue
		}
		sum := ""
		if filepath.IsAbs(resolved) {
			sum = a.digestLocked(resolved)
		}
		if i := slices.IndexFunc(l.Allowlist, func(e AllowEntry) bool { return strings.EqualFold(e.Pattern, pattern) }); i >= 0 {
			// Approved again: an entry bound to an older binary follows
			// the one approved now.
			if e := &l.Allowlist[i]; e.ResolvedSHA256 != "" && (e.ResolvedSHA256 != sum || e.LastResolvedPath != resolved) {
				e.ResolvedSHA256, e.LastResolvedPath, e.LastUsedAt, e.LastUsedCommand = sum, resolved, now, command
				changed = true
			}
			continue
		}
		l.Allowlist = append(l.Allowlist, AllowEntry{ID: uuid.NewString(), Pattern: pattern, Source: AllowAlways,
			LastUsedAt: now, LastUsedCommand: command, LastResolvedPath: resolved, ResolvedSHA256: sum})
		changed = true
	}
	if !changed {
		return nil
	}
	a.doc.Agents[agent] = l
	b, err := json.MarshalIndent(a.doc, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(a.path, b); err != nil {
		return fmt.Errorf("approval.Allowlists.Add: %w", err)
	}
	return nil
}

// Document returns the approvals document's path, whether the file
// exists, and its content (the empty document when it does not).
func (a *Allowlists) Document() (path string, exists bool, raw []byte, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	b, err := os.ReadFile(a.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		b, err = json.Marshal(a.doc)
		return a.path, false, b, err
	case err != nil:
		return a.path, false, nil, fmt.Errorf("approval.Allowlists.Document: %w", err)
	}
	return a.path, true, b, nil
}

// Hash is the approvals document's version as exec.approvals.get reports
// it and exec.approvals.set expects back: the SHA-256 of its bytes, hex.
func Hash(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// Errors of Replace, worded as the reference's exec.approvals.set.
var (
	ErrBaseHashRequired = errors.New("exec approvals base hash required; re-run exec.approvals.get and retry")
	ErrChanged          = errors.New("exec approvals changed since last load; re-run exec.approvals.get and retry")
)

// InvalidDocumentError reports an approvals document Replace refused.
type InvalidDocumentError struct{ Reason string }

// Error implements error.
func (e *InvalidDocumentError) Error() string { return "invalid exec approvals file: " + e.Reason }

// Replace makes raw the approvals document, if baseHash is the hash of
// the current one (Hash of what Document returned). Once the file exists
// baseHash is required. raw is checked (policy values, non-empty
// patterns), entries without an id get one, and it is stored in the
// canonical form.
func (a *Allowlists) Replace(raw []byte, baseHash string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	cur, err := os.ReadFile(a.path)
	exists := err == nil
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if cur, err = json.Marshal(a.doc); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("approval.Allowlists.Replace: %w", err)
	}
	baseHash = strings.TrimSpace(baseHash)
	switch {
	case exists && baseHash == "":
		return ErrBaseHashRequired
	case baseHash != "" && baseHash != Hash(cur):
		return ErrChanged
	}
	var doc allowDoc
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if err := dec.Decode(&doc); err != nil {
		return &InvalidDocumentError{Reason: err.Error()}
	}
	if err := checkDoc(&doc); err != nil {
		return err
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(a.path, b); err != nil {
		return fmt.Errorf("approval.Allowlists.Replace: %w", err)
	}
	a.doc = doc
	return nil
}

// checkDoc validates doc and fills in what it may leave out.
func checkDoc(doc *allowDoc) error {
	if doc.Version == 0 {
		doc.Version = 1
	}
	if doc.Version != 1 {
		return &InvalidDocumentError{Reason: fmt.Sprintf("version %d: want 1", doc.Version)}
	}
	if doc.Agents == nil {
		doc.Agents = map[string]agentList{}
	}
	check := func(where string, p docPolicy) error {
		bad := func(key, v string, allowed ...string) error {
			if v == "" || slices.Contains(allowed, v) {
				return nil
			}
			return &InvalidDocumentError{Reason: fmt.Sprintf("%s.%s %q: want %s", where, key, v, strings.Join(allowed, ", "))}
		}
		return errors.Join(
			bad("security", p.Security, SecurityDeny, SecurityAllowlist, SecurityFull),
			bad("ask", p.Ask, AskOff, AskOnMiss, AskAlways),
			bad("askFallback", p.AskFallback, SecurityDeny, SecurityAllowlist, SecurityFull))
	}
	if doc.Defaults != nil {
		if err := check("defaults", *doc.Defaults); err != nil {
			return err
		}
	}
	for id, l := range doc.Agents {
		where := "agents." + id
		if err := check(where, l.docPolicy); err != nil {
			return err
		}
		for i := range l.Allowlist {
			e := &l.Allowlist[i]
			if strings.TrimSpace(e.Pattern) == "" {
				return &InvalidDocumentError{Reason: fmt.Sprintf("%s.allowlist[%d]: pattern is required", where, i)}
			}
			if e.ID == "" {
				e.ID = uuid.NewString()
			}
		}
		if l.Allowlist == nil {
			l.Allowlist = []AllowEntry{}
		}
		doc.Agents[id] = l
	}
	return nil
}

// Policy returns the policy the approvals document sets for agent: its
// own fields, else the document's defaults. Empty fields set nothing.
func (a *Allowlists) Policy(agent string) Policy {
	a.mu.Lock()
	defer a.mu.Unlock()
	var p Policy
	if d := a.doc.Defaults; d != nil {
		p = Policy{Security: d.Security, Ask: d.Ask, AskFallback: d.AskFallback}
	}
	if l, ok := a.doc.Agents[agent]; ok {
		p.Security = cmp.Or(l.Security, p.Security)
		p.Ask = cmp.Or(l.Ask, p.Ask)
		p.AskFallback = cmp.Or(l.AskFallback, p.AskFallback)
	}
	return p
}
