package files

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/switchboardhq/switchboard/internal/tools"
)

var listSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Directory, relative to the workspace (default: the workspace itself)."},
    "recursive": {"type": "boolean", "description": "Also list everything below it (symbolic links are not followed)."}
  }
}`)

type listTool struct{}

func (listTool) Name() string  { return ListToolName }
func (listTool) Label() string { return "List" }
func (listTool) Description() string {
	return "List a directory in your workspace: name, type (file, dir, symlink or other) and, for files, bytes. " +
		"recursive=true walks subdirectories without following symbolic links. At most 1000 entries."
}
func (listTool) Schema() json.RawMessage { return listSchema }

// listEntry is one listed entry.
type listEntry struct {
	// Name is relative to the listed directory, slash-separated.
	Name string `json:"name"`
	// Type is "file", "dir", "symlink" or "other" (devices, pipes,
	// sockets).
	Type string `json:"type"`
	// Bytes is a file's size; absent for other types.
	Bytes *int64 `json:"bytes,omitempty"`
}

// listResult is list's payload.
type listResult struct {
	// Path is the directory's real path relative to the workspace.
	Path    string      `json:"path"`
	Entries []listEntry `json:"entries"`
	// Truncated is set when more than MaxListEntries entries were found.
	Truncated bool `json:"truncated,omitempty"`
}

// Call lists {path? = ".", recursive?}: entries sorted by name (depth
// first when recursive), at most MaxListEntries. Unreadable
// subdirectories are skipped.
func (listTool) Call(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
	p, err := tools.ParseParams(args)
	if err != nil {
		return nil, err
	}
	dirPath, _ := pathParam(p, ".")
	recursive, _ := p.Bool("recursive")
	w, err := callerWorkspace(ctx, false)
	if err != nil {
		return nil, err
	}
	rel, err := w.resolve(dirPath)
	if err != nil {
		return nil, err
	}
	root, err := w.openRoot()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if fi, err := root.Stat(rel); err != nil {
		return nil, opError(dirPath, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("not a directory: %s", dirPath)
	}
	res := &listResult{Path: display(rel), Entries: []listEntry{}}
	fsys := root.FS()
	start := display(rel)
	if !recursive {
		ents, err := fs.ReadDir(fsys, start)
		if err != nil {
			return nil, opError(dirPath, err)
		}
		for _, d := range ents {
			if len(res.Entries) == MaxListEntries {
				res.Truncated = true
				break
			}
			res.Entries = append(res.Entries, entryOf(d.Name(), d))
		}
		return tools.JSONResult(res), nil
	}
	errStop := errors.New("stop")
	err = fs.WalkDir(fsys, start, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if p == start {
				return err
			}
			return nil // unreadable subdirectory: skip it
		}
		if p == start {
			return nil
		}
		if len(res.Entries) == MaxListEntries {
			res.Truncated = true
			return errStop
		}
		name := p
		if start != "." {
			name = strings.TrimPrefix(p, start+"/")
		}
		res.Entries = append(res.Entries, entryOf(name, d))
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, opError(dirPath, err)
	}
	return tools.JSONResult(res), nil
}

// entryOf describes d, listed as name.
func entryOf(name string, d fs.DirEntry) listEntry {
	e := listEntry{Name: path.Clean(name)}
	switch t := d.Type(); {
	case t&fs.ModeSymlink != 0:
		e.Type = "symlink"
	case t.IsDir():
		e.Type = "dir"
	case t.IsRegular():
		e.Type = "file"
		if fi, err := d.Info(); err == nil {
			n := fi.Size()
			e.Bytes = &n
		}
	default:
		e.Type = "other"
	}
	return e
}
