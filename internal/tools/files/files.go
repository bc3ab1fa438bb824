// Package files owns the agent's workspace file tools — read, write, edit, apply_patch and
// ls — confined to the calling session's workspace directory
// (tools.Caller.Workspace).
//
// Paths (the trimmed "path" argument) are relative to the workspace;
// absolute paths are accepted when they lie inside it. A path is cleaned (".." applied lexically), then its
// symbolic links are resolved — EvalSymlinks on its longest existing
// prefix, a dangling link through its target, as creating a file through
// it would — and it is refused with "path escapes the workspace: <path>"
// when that real path is outside the workspace's real path. The
// operation then runs through an [os.Root] on the workspace, so a link
// swapped in after the check cannot lead it out either. Writes into
// .switchboard/attachments are allowed like any other path.
//
// It depends only on the tools package; the daemon adds All to the tool
// set of sessions that have a workspace.
package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/switchboardhq/switchboard/internal/tools"
)

// Limits of the tools.
const (
	// MaxReadBytes caps the content one read returns.
	MaxReadBytes = 256 << 10
	// MaxWriteBytes caps the content of one write.
	MaxWriteBytes = 5 << 20
)

// Wire names of the tools.
const (
	ReadToolName  = "read"
	WriteToolName = "write"
	// LsToolName is the directory-listing tool, named as the reference
	// names it.
	LsToolName = "ls"
)

// maxLinkHops bounds how many dangling links resolve follows.
const maxLinkHops = 40

// All returns the file tools: read, write, edit, apply_patch and ls.
func All() []tools.Tool {
	return []tools.Tool{readTool{}, writeTool{}, editTool{}, patchTool{}, lsTool{}}
}

// workspace is the caller's workspace directory.
type workspace struct {
	// real is the workspace's absolute path with links resolved.
	real string
}

// callerWorkspace returns the workspace of the caller in ctx. With create
// a missing workspace directory is created (mode 0700).
func callerWorkspace(ctx context.Context, create bool) (*workspace, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir := strings.TrimSpace(tools.CallerFrom(ctx).Workspace)
	if dir == "" {
		return nil, errors.New("no workspace: this session has no workspace directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace unavailable: %w", err)
	}
	if create {
		if err := os.MkdirAll(abs, 0o700); err != nil {
			return nil, fmt.Errorf("workspace unavailable: %w", err)
		}
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace unavailable: %w", err)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("workspace unavailable: %s is not a directory", dir)
	}
	return &workspace{real: real}, nil
}

// resolve returns p's real path relative to the workspace (in OS form;
// "." for the workspace itself), or an error when it escapes.
func (w *workspace) resolve(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("invalid path: %q", p)
	}
	var abs string
	if filepath.IsAbs(p) {
		abs = filepath.Clean(p)
	} else {
		abs = filepath.Join(w.real, p)
	}
	real, err := realPath(abs, 0)
	if err != nil {
		return "", fmt.Errorf("cannot resolve %s: %w", p, err)
	}
	rel, ok := relInside(w.real, real)
	if !ok {
		return "", fmt.Errorf("path escapes the workspace: %s", p)
	}
	return rel, nil
}

// realPath returns the absolute, clean path abs with every symbolic link
// resolved: EvalSymlinks on its longest existing prefix, the missing rest
// appended; a dangling link is resolved through its target.
func realPath(abs string, hops int) (string, error) {
	if hops > maxLinkHops {
		return "", errors.New("too many levels of symbolic links")
	}
	q, tail := abs, ""
	for {
		fi, err := os.Lstat(q)
		if err == nil {
			real, err := filepath.EvalSymlinks(q)
			if err == nil {
				return filepath.Join(real, tail), nil
			}
			if fi.Mode()&os.ModeSymlink == 0 || !errors.Is(err, os.ErrNotExist) {
				return "", err
			}
			// q is a link whose target (or a link on the way) is missing:
			// follow it by hand, as creating a file through it would.
			target, err := os.Readlink(q)
			if err != nil {
				return "", err
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(q), target)
			}
			return realPath(filepath.Join(target, tail), hops+1)
		}
		if !errors.Is(err, os.ErrNotExist) && !isNotDir(err) {
			return "", err
		}
		parent := filepath.Dir(q)
		if parent == q {
			return abs, nil
		}
		tail = filepath.Join(filepath.Base(q), tail)
		q = parent
	}
}

// relInside returns p relative to base when p is base or below it.
func relInside(base, p string) (string, bool) {
	rel, err := filepath.Rel(base, p)
	if err != nil || filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// openRoot opens the workspace for an operation on a resolved path.
func (w *workspace) openRoot() (*os.Root, error) {
	r, err := os.OpenRoot(w.real)
	if err != nil {
		return nil, fmt.Errorf("workspace unavailable: %w", err)
	}
	return r, nil
}

// openPath opens the caller's workspace (which must exist) and resolves
// path in it: the root to operate through, to be closed, and the path
// relative to it.
func openPath(ctx context.Context, path string) (*os.Root, string, error) {
	w, err := callerWorkspace(ctx, false)
	if err != nil {
		return nil, "", err
	}
	rel, err := w.resolve(path)
	if err != nil {
		return nil, "", err
	}
	root, err := w.openRoot()
	if err != nil {
		return nil, "", err
	}
	return root, rel, nil
}

// display is rel as the tools report it: slash-separated.
func display(rel string) string { return filepath.ToSlash(rel) }

// pathParam reads the path argument; def is used when it is absent ("" =
// required).
func pathParam(p tools.Params, def string) (string, error) {
	if s := p.String("path"); s != "" {
		return s, nil
	}
	if def != "" {
		return def, nil
	}
	return "", errors.New("path required")
}

// opError turns a file-system error from a root operation into the
// tool's message for the path the caller passed.
func opError(p string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("not found: %s", p)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("permission denied: %s", p)
	case err.Error() == "path escapes from parent":
		return fmt.Errorf("path escapes the workspace: %s", p)
	}
	return fmt.Errorf("%s: %w", p, err)
}

// isNotDir reports whether err is ENOTDIR (a path component is a file).
func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }

// LinkCount is the number of hard links of the file fi describes (1 where
// the platform does not say); callers outside this package refuse
// hard-linked files with it as the file tools do.
func LinkCount(fi fs.FileInfo) uint64 { return linkCount(fi) }
