// Package prompt owns a run's base system prompt: the bootstrap files of
// its agent's workspace (AGENTS.md, SOUL.md, IDENTITY.md, USER.md), then
// MEMORY.md in private sessions, then the daily notes in a transcript that
// /new or /reset started, under the reference's bootstrap budgets. The
// daemon hands Builder to the runner.
package prompt

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/fsstamp"
	"github.com/switchboardhq/switchboard/internal/memory"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/skills"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools/files"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// bootstrapFiles are the workspace files that make up an agent's base system
// prompt, in order (the reference seeds its workspaces with these);
// MEMORY.md follows them in sessions that may see it (memoryEligible).
var bootstrapFiles = []string{"AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md"}

// TranscriptHead is what Builder needs of the store: a transcript's
// first entry tells whether /new or /reset started it.
type TranscriptHead interface {
	History(ctx context.Context, sessionID string, opts store.HistoryOptions) ([]store.Message, error)
}

// Builder returns the function that builds a run's base system prompt from the bootstrap files
// in its agent's workspace, then MEMORY.md, then — in a transcript that
// /new or /reset started — yesterday's and today's daily notes, all under
// the reference's bootstrap budgets (memory.BuildBootstrap); missing files,
// and files the read tool would refuse (not regular, or with other hard
// links), are skipped. st may be nil (no daily notes).
// Then the skills the agent may use (sk may be nil: none).
//
// A file or skill folder found missing is not stat'ed again while the
// folder above it is unchanged (fsstamp): a warm turn on a workspace
// without them stats the workspace and the state dir, once each.
func Builder(set *settings.Settings, st TranscriptHead, sk *skills.Agents) func(context.Context, agent.RunInfo) string {
	return newBuilder(set, st, sk, &bootstrapCache{absent: &fsstamp.Cache{}})
}

// newBuilder is Builder with the cache of bootstrap files given (tests
// count its stats).
func newBuilder(set *settings.Settings, st TranscriptHead, sk *skills.Agents, boot *bootstrapCache) func(context.Context, agent.RunInfo) string {
	var heads resetHeads
	return func(ctx context.Context, info agent.RunInfo) string {
		dir := set.Agent(info.AgentID).Workspace
		if dir == "" {
			return ""
		}
		v := boot.absent.View()
		var files []memory.BootstrapFile
		for i, path := range boot.paths(dir) {
			if content, err := boot.read(&v, path); err == nil {
				files = append(files, memory.BootstrapFile{Name: bootstrapFiles[i], Content: content})
			}
		}
		if memoryEligible(info) {
			// Memory files are read as the memory tools read them: no links.
			files = append(files, memory.ReadBootstrapLstat(v.Lstat, dir, memory.MemoryFile)...)
			if heads.startedByReset(ctx, st, info) {
				files = append(files, memory.DailyNotes(dir, time.Now())...)
			}
		}
		var parts []string
		budget := memory.Budget{MaxChars: set.BootstrapMaxChars, TotalMaxChars: set.BootstrapTotalMaxChars}
		for _, f := range memory.BuildBootstrap(files, budget) {
			parts = append(parts, "## "+f.Name+"\n\n"+strings.TrimSpace(f.Content))
		}
		if sk != nil {
			if sec := sk.SectionIn(&v, info.AgentID, "read"); sec != "" {
				parts = append(parts, sec)
			}
		}
		return strings.Join(parts, "\n\n")
	}
}

// bootstrapCache keeps each bootstrap file's content until a stat of the
// path shows another file, size, modification time or mode: a warm turn
// stats the files and reads none it read before, and an edited file is
// read again on the next turn; a missing one is not stat'ed while its
// folder is unchanged (absent). It is safe for concurrent use.
type bootstrapCache struct {
	absent *fsstamp.Cache

	mu    sync.Mutex
	files map[string]cachedBootstrap
	reads int // files read (not served from the cache), for tests
	// byDir holds each workspace's bootstrap file paths (see paths).
	byDir map[string][]string
}

// maxBootstrapDirs bounds bootstrapCache.byDir; past it the paths are
// joined again from scratch.
const maxBootstrapDirs = 256

// paths returns the paths of the bootstrapFiles in workspace dir, joined
// once per workspace rather than on every run.
func (c *bootstrapCache) paths(dir string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.byDir[dir]; ok {
		return p
	}
	p := make([]string, len(bootstrapFiles))
	for i, name := range bootstrapFiles {
		p[i] = filepath.Join(dir, name)
	}
	if c.byDir == nil || len(c.byDir) >= maxBootstrapDirs {
		c.byDir = map[string][]string{}
	}
	c.byDir[dir] = p
	return p
}

type cachedBootstrap struct {
	fi      os.FileInfo
	content string
}

// read returns the content of the bootstrap file at path, as
// readBootstrap would, stat'ing it through v; the hard-link check is made
// on every call.
func (c *bootstrapCache) read(v *fsstamp.View, path string) (string, error) {
	fi, err := v.Stat(path)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", os.ErrInvalid
	}
	if err := files.RefuseHardLinks("read", filepath.Base(path), fi); err != nil {
		return "", err
	}
	c.mu.Lock()
	k, ok := c.files[path]
	c.mu.Unlock()
	if ok && sameVersion(k.fi, fi) {
		return k.content, nil
	}
	b, err := readBootstrap(path)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	if err != nil {
		delete(c.files, path)
		return "", err
	}
	if c.files == nil {
		c.files = map[string]cachedBootstrap{}
	}
	// fi was taken before the read: a later write changes the
	// modification time, unless it falls in the same tick of the file
	// system's clock, so a file modified within racyWindow is not kept.
	if time.Since(fi.ModTime()) > racyWindow {
		c.files[path] = cachedBootstrap{fi: fi, content: string(b)}
	} else {
		delete(c.files, path)
	}
	return string(b), nil
}

// racyWindow is how old a file's modification time must be for its
// content to be kept: file systems stamp writes with a coarse clock
// (a few milliseconds on Linux, 2 s on FAT), and two same-size writes in
// one tick look alike to a stat.
const racyWindow = 2 * time.Second

// sameVersion reports whether two stats of a path show the same file,
// unchanged.
func sameVersion(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) && a.Mode() == b.Mode()
}

// readBootstrap returns the bootstrap file at path (refused above
// memory.MaxFileBytes; the prompt's budgets cut it later). Like the read tool it refuses a file that is not regular or has
// other hard links: its content reaches the model, and through it whoever
// drives the session.
func readBootstrap(path string) ([]byte, error) {
	if fi, err := os.Stat(path); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, os.ErrInvalid // a FIFO would block the open
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, os.ErrInvalid
	}
	if err := files.RefuseHardLinks("read", filepath.Base(path), fi); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, memory.MaxFileBytes+1))
	if err == nil && len(b) > memory.MaxFileBytes {
		return nil, os.ErrInvalid
	}
	return b, err
}

// memoryEligible reports whether a run's session gets root memory: as in
// the reference, sub-agent, cron, group and channel sessions do not.
func memoryEligible(info agent.RunInfo) bool {
	key := info.SessionKey
	if sessionkey.IsSubagent(key) || sessionkey.IsCron(key) {
		return false
	}
	if s := info.Session; s != nil && (s.SpawnedBy != "" || s.ChatType == "group" || s.ChatType == "channel") {
		return false
	}
	switch sessionkey.ChatTypeOf(key) {
	case sessionkey.ChatGroup, sessionkey.ChatChannel:
		return false
	}
	return true
}

// maxResetHeads bounds resetHeads.
const maxResetHeads = 4096

// resetHeads remembers what startedByReset found per transcript: a
// transcript's first entry never changes, so a warm turn need not read it
// again.
type resetHeads struct {
	mu sync.Mutex // guards m
	m  map[string]bool
}

// startedByReset is the package's startedByReset, remembered per
// transcript once it has a first entry.
func (h *resetHeads) startedByReset(ctx context.Context, st TranscriptHead, info agent.RunInfo) bool {
	if info.Session == nil {
		return false
	}
	id := info.Session.SessionID
	h.mu.Lock()
	v, ok := h.m[id]
	h.mu.Unlock()
	if ok {
		return v
	}
	v, known := startedByReset(ctx, st, info)
	if known {
		h.mu.Lock()
		if h.m == nil || len(h.m) >= maxResetHeads {
			h.m = make(map[string]bool)
		}
		h.m[id] = v
		h.mu.Unlock()
	}
	return v
}

// startedByReset reports whether the run's transcript begins with the
// reset entry /new or /reset writes (not an automatic daily or idle
// reset's). known is false when the transcript has no first entry yet, or
// it could not be read.
func startedByReset(ctx context.Context, st TranscriptHead, info agent.RunInfo) (v, known bool) {
	if st == nil || info.Session == nil || info.Session.SessionID == "" {
		return false, false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	msgs, err := st.History(ctx, info.Session.SessionID, store.HistoryOptions{BeforeSeq: 2})
	if err != nil || len(msgs) == 0 {
		return false, false
	}
	e := msgs[0].Entry
	if e.Type != transcript.TypeReset {
		return false, true
	}
	var reason string
	_ = json.Unmarshal(e.Extra["reason"], &reason)
	return reason == compaction.CmdNew || reason == compaction.CmdReset, true
}
