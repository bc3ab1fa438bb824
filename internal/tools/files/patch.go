package files

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/switchboardhq/switchboard/internal/tools"
)

// PatchToolName is the wire name of the apply_patch tool.
const PatchToolName = "apply_patch"

var patchSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "input": {"type": "string", "description": "The whole patch, from '*** Begin Patch' to '*** End Patch', with '*** Add File:', '*** Update File:' (optionally '*** Move to:', then @@ hunks of ' ', '-' and '+' lines) and '*** Delete File:' sections."}
  },
  "required": ["input"]
}`)

type patchTool struct{}

func (patchTool) Name() string  { return PatchToolName }
func (patchTool) Label() string { return "Apply patch" }
func (patchTool) Description() string {
	return "Add, update, move and delete files of your workspace with one patch in the *** Begin Patch format. " +
		"Operations run in order; paths are relative to the workspace."
}
func (patchTool) Schema() json.RawMessage { return patchSchema }

// patchResult is apply_patch's payload.
type patchResult struct {
	Added    []string `json:"added"`
	Modified []string `json:"modified"`
	Deleted  []string `json:"deleted"`
}

// Call applies {input}. Operations run in order, each confined to the
// workspace as write is; an error stops the patch, leaving earlier
// operations applied (as the reference does).
func (patchTool) Call(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
	p, err := tools.ParseParams(args)
	if err != nil {
		return nil, err
	}
	input := p.RawString("input")
	if strings.TrimSpace(input) == "" {
		return nil, errors.New("Provide a patch input.")
	}
	ops, err := parsePatch(input)
	if err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, errors.New("No files were modified.")
	}
	w, err := callerWorkspace(ctx, true)
	if err != nil {
		return nil, err
	}
	root, err := w.openRoot()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	res := &patchResult{Added: []string{}, Modified: []string{}, Deleted: []string{}}
	var unchanged []string
	for _, op := range ops {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var rel string
		if op.kind == 'D' {
			rel, err = w.resolveLink(op.path)
		} else {
			rel, err = w.resolve(op.path)
		}
		if err != nil {
			return nil, err
		}
		switch op.kind {
		case 'A':
			if err := createExclusive(root, rel, op.contents, fmt.Sprintf("Use \"*** Update File: %s\" to change it, or delete it earlier in the same patch.", display(rel))); err != nil {
				return nil, err
			}
			res.Added = appendOnce(res.Added, display(rel))
		case 'D':
			if err := removeFile(root, rel); err != nil {
				return nil, err
			}
			res.Deleted = appendOnce(res.Deleted, display(rel))
		case 'U':
			before, err := readForUpdate(root, rel)
			if err != nil {
				return nil, err
			}
			after, err := applyChunks(before, op.chunks, display(rel))
			if err != nil {
				return nil, err
			}
			target := rel
			if op.movePath != "" {
				if target, err = w.resolve(op.movePath); err != nil {
					return nil, err
				}
			}
			switch {
			case target != rel:
				if err := createExclusive(root, target, after, "Delete it earlier in the same patch to replace it."); err != nil {
					return nil, err
				}
				if err := root.Remove(rel); err != nil {
					return nil, opError(op.path, err)
				}
				res.Modified = appendOnce(res.Modified, display(target))
			case after == before:
				unchanged = append(unchanged, display(rel))
			default:
				if err := rewrite(root, rel, after); err != nil {
					return nil, err
				}
				res.Modified = appendOnce(res.Modified, display(rel))
			}
		}
	}
	if len(res.Added)+len(res.Modified)+len(res.Deleted) == 0 && len(unchanged) > 0 {
		return &tools.Result{Details: res, Text: fmt.Sprintf("No changes made to %s.", strings.Join(unchanged, ", "))}, nil
	}
	lines := []string{"Success. Updated the following files:"}
	for _, f := range res.Added {
		lines = append(lines, "A "+f)
	}
	for _, f := range res.Modified {
		lines = append(lines, "M "+f)
	}
	for _, f := range res.Deleted {
		lines = append(lines, "D "+f)
	}
	return &tools.Result{Details: res, Text: strings.Join(lines, "\n")}, nil
}

// resolveLink is resolve for an operation on a final link itself (a
// delete): its directory is resolved, its last element kept.
func (w *workspace) resolveLink(p string) (string, error) {
	clean := filepath.Clean(p)
	base := filepath.Base(clean)
	if base == "." || base == ".." || base == string(filepath.Separator) {
		return w.resolve(p)
	}
	dir, err := w.resolve(filepath.Dir(clean))
	if err != nil {
		return "", fmt.Errorf("path escapes the workspace: %s", p)
	}
	return filepath.Join(dir, base), nil
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// createExclusive creates rel (and its parent directories) with contents;
// an existing path is refused with hint.
func createExclusive(root *os.Root, rel, contents, hint string) error {
	if rel == "." {
		return fmt.Errorf("is a directory: %s", display(rel))
	}
	if len(contents) > MaxWriteBytes {
		return fmt.Errorf("content too large: %d bytes (max %d per file)", len(contents), MaxWriteBytes)
	}
	if dir := filepath.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o700); err != nil {
			return opError(display(rel), err)
		}
	}
	f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("Cannot create %s: the file already exists. %s", display(rel), hint)
	}
	if err != nil {
		return opError(display(rel), err)
	}
	_, err = f.WriteString(contents)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return opError(display(rel), err)
	}
	return nil
}

// removeFile deletes the file (or link) rel; directories are refused.
func removeFile(root *os.Root, rel string) error {
	fi, err := root.Lstat(rel)
	if err != nil {
		return opError(display(rel), err)
	}
	if fi.IsDir() {
		return fmt.Errorf("is a directory: %s", display(rel))
	}
	if err := root.Remove(rel); err != nil {
		return opError(display(rel), err)
	}
	return nil
}

// readForUpdate reads the regular file rel for an update.
func readForUpdate(root *os.Root, rel string) (string, error) {
	f, err := root.Open(rel)
	if err != nil {
		return "", fmt.Errorf("Failed to read file to update %s: %w", display(rel), opError(display(rel), err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", opError(display(rel), err)
	}
	switch {
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("Failed to read file to update %s: not a regular file", display(rel))
	case fi.Size() > MaxWriteBytes:
		return "", fmt.Errorf("file too large to patch: %s is %d bytes (max %d)", display(rel), fi.Size(), MaxWriteBytes)
	}
	if err := RefuseHardLinks("patch", display(rel), fi); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxWriteBytes+1))
	if err != nil {
		return "", opError(display(rel), err)
	}
	return string(b), nil
}

// rewrite replaces rel's contents in place, refusing files with other
// hard links as write does.
func rewrite(root *os.Root, rel, contents string) error {
	if len(contents) > MaxWriteBytes {
		return fmt.Errorf("content too large: %d bytes (max %d per file)", len(contents), MaxWriteBytes)
	}
	f, err := root.OpenFile(rel, os.O_WRONLY, 0)
	if err != nil {
		return opError(display(rel), err)
	}
	fi, err := f.Stat()
	if err == nil {
		if err := RefuseHardLinks("patch", display(rel), fi); err != nil {
			f.Close()
			return err
		}
	}
	if err == nil {
		err = f.Truncate(0)
	}
	if err == nil {
		_, err = f.WriteString(contents)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return opError(display(rel), err)
	}
	return nil
}
