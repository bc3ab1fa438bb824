// Package memory owns an agent's memory files as the reference has them:
// MEMORY.md (long-term memory), USER.md (the user model), DREAMS.md and the
// Markdown notes under memory/ (daily notes are memory/YYYY-MM-DD.md or
// memory/YYYY-MM-DD-<slug>.md), all in the agent's workspace.
//
// It builds the bootstrap part of the system prompt with the reference's
// budgets and truncation (Bootstrap), reads a memory file excerpt as
// memory_get does (Read), and keeps a keyword index of the files in the
// store (Index): chunks of about 400 tokens with 80 tokens of overlap,
// re-indexed on each search for the files whose size, modification time and
// then content hash changed. CJK characters are indexed one character per
// token and searched as phrases, so Chinese, Japanese and Korean text is
// found without a word segmenter.
//
// Files are confined to the workspace: a path must name a memory file,
// symbolic links (in the file or a parent directory) and files with more
// than one hard link are refused, and reads go through an [os.Root].
package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/switchboardhq/switchboard/internal/tools/files"
)

// File names of the memory files at the workspace root.
const (
	MemoryFile = "MEMORY.md"
	UserFile   = "USER.md"
	DreamsFile = "DREAMS.md"
	// Dir is the folder of the other memory notes.
	Dir = "memory"
)

// MaxFileBytes caps the size of a memory file that is indexed or read.
const MaxFileBytes = 8 << 20

// ErrPathNotAllowed is returned for a path that is not a memory file of the
// workspace, with the reference's message.
var ErrPathNotAllowed = errors.New("path is not an allowed Markdown memory file")

// IsMemoryPath reports whether rel, a slash-separated path relative to the
// workspace, names a memory file: MEMORY.md, USER.md, DREAMS.md (any case)
// or a .md file under memory/.
func IsMemoryPath(rel string) bool {
	if rel == "" || strings.ContainsRune(rel, 0) || strings.Contains(rel, "\\") {
		return false
	}
	clean := path.Clean(rel)
	if clean != rel || path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return false
	}
	if clean == MemoryFile || clean == UserFile || strings.EqualFold(clean, DreamsFile) {
		return true
	}
	return strings.HasPrefix(clean, Dir+"/") && strings.HasSuffix(clean, ".md")
}

// NormalizePath turns a path the model passed (relative to workspace, or
// absolute inside it) into the slash-separated relative form, or returns
// ErrPathNotAllowed.
func NormalizePath(workspace, p string) (string, error) {
	p = strings.TrimSpace(p)
	if p == "" {
		return "", errors.New("path required")
	}
	if strings.ContainsRune(p, 0) {
		return "", ErrPathNotAllowed
	}
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(workspace, filepath.Clean(p))
		if err != nil {
			return "", ErrPathNotAllowed
		}
		p = rel
	}
	rel := path.Clean(filepath.ToSlash(p))
	if !IsMemoryPath(rel) {
		return "", ErrPathNotAllowed
	}
	return rel, nil
}

// errLinked refuses a file reached through a link.
var errLinked = errors.New("memory file is a symbolic link or has several hard links")

// checkNoLinks refuses rel when the file or any directory on the way to it
// inside workspace is a symbolic link, or when the file has more than one
// hard link. It returns the file's info; a missing file gives an error
// satisfying errors.Is(err, fs.ErrNotExist). lstat is os.Lstat or one that
// acts alike.
func checkNoLinks(lstat func(string) (fs.FileInfo, error), workspace, rel string) (fs.FileInfo, error) {
	cur := workspace
	for rest := rel; ; {
		part, after, more := strings.Cut(rest, "/") // no slice of parts: a warm turn checks MEMORY.md
		cur = filepath.Join(cur, part)
		fi, err := lstat(cur)
		if err != nil {
			return nil, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, errLinked
		}
		if more {
			if !fi.IsDir() {
				return nil, fs.ErrNotExist
			}
			rest = after
			continue
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file", rel)
		}
		if files.LinkCount(fi) > 1 {
			return nil, errLinked
		}
		return fi, nil
	}
}

// readFile reads the memory file rel of workspace through an os.Root after
// checkNoLinks (with lstat), refusing files above MaxFileBytes.
func readFile(lstat func(string) (fs.FileInfo, error), workspace, rel string) ([]byte, fs.FileInfo, error) {
	fi, err := checkNoLinks(lstat, workspace, rel)
	if err != nil {
		return nil, nil, err
	}
	if fi.Size() > MaxFileBytes {
		return nil, nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit of memory files", rel, fi.Size(), MaxFileBytes)
	}
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	b, err := root.ReadFile(filepath.FromSlash(rel))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(b)) > MaxFileBytes {
		return nil, nil, fmt.Errorf("%s is over the %d-byte limit of memory files", rel, MaxFileBytes)
	}
	return b, fi, nil
}

// fileStat is a memory file found by listFiles.
type fileStat struct {
	rel     string
	size    int64
	mtimeNs int64
}

// listFiles returns the memory files of workspace that can be indexed:
// MEMORY.md, USER.md and DREAMS.md when present, and every .md file under
// memory/ (recursively), skipping symbolic links, files with several hard
// links and files above MaxFileBytes. Sorted by path.
func listFiles(workspace string) ([]fileStat, error) {
	var out []fileStat
	add := func(rel string, fi fs.FileInfo) {
		if fi.Mode().IsRegular() && files.LinkCount(fi) <= 1 && fi.Size() <= MaxFileBytes {
			out = append(out, fileStat{rel: rel, size: fi.Size(), mtimeNs: fi.ModTime().UnixNano()})
		}
	}
	entries, err := os.ReadDir(workspace)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("memory: list %s: %w", workspace, err)
	}
	for _, e := range entries {
		name := e.Name()
		if name != MemoryFile && name != UserFile && !strings.EqualFold(name, DreamsFile) {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(workspace, name)); err == nil {
			add(name, fi)
		}
	}
	dir := filepath.Join(workspace, Dir)
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return out, nil // missing, or a link: not followed
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // an unreadable subfolder is skipped
		}
		if d.Type()&fs.ModeSymlink != 0 || d.IsDir() || !strings.HasSuffix(d.Name(), ".md") {
			return nil
		}
		rel, err := filepath.Rel(workspace, p)
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			add(filepath.ToSlash(rel), fi)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("memory: list %s: %w", dir, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out, nil
}
