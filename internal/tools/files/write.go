package files

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/switchboardhq/switchboard/internal/tools"
)

var writeSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path, relative to the workspace (an absolute path must lie inside it). Missing directories are created."},
    "content": {"type": "string", "description": "Text to write (at most 5 MiB)."},
    "append": {"type": "boolean", "description": "Append to the file instead of replacing it."}
  },
  "required": ["path", "content"]
}`)

type writeTool struct{}

func (writeTool) Name() string  { return WriteToolName }
func (writeTool) Label() string { return "Write" }
func (writeTool) Description() string {
	return "Write a text file in your workspace, replacing it or (append=true) appending to it. " +
		"Missing parent directories are created. At most 5 MiB per call."
}
func (writeTool) Schema() json.RawMessage { return writeSchema }

// writeResult is write's payload.
type writeResult struct {
	// Path is the file's real path relative to the workspace.
	Path string `json:"path"`
	// Bytes is the number of bytes written.
	Bytes int `json:"bytes"`
}

// Call writes {path, content, append?}: content (as given, not trimmed)
// replaces the file or is appended to it. New directories (the workspace
// itself included) get mode 0700 and new files 0600; existing files keep
// their mode.
func (writeTool) Call(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
	p, err := tools.ParseParams(args)
	if err != nil {
		return nil, err
	}
	path, err := pathParam(p, "")
	if err != nil {
		return nil, err
	}
	content, ok := p["content"].(string)
	if !ok {
		return nil, errors.New("content required")
	}
	if len(content) > MaxWriteBytes {
		return nil, fmt.Errorf("content too large: %d bytes (max %d per write)", len(content), MaxWriteBytes)
	}
	appendMode, _ := p.Bool("append")
	w, err := callerWorkspace(ctx, true)
	if err != nil {
		return nil, err
	}
	rel, err := w.resolve(path)
	if err != nil {
		return nil, err
	}
	if rel == "." {
		return nil, fmt.Errorf("is a directory: %s", path)
	}
	root, err := w.openRoot()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if fi, err := root.Lstat(rel); err == nil {
		switch {
		case fi.IsDir():
			return nil, fmt.Errorf("is a directory: %s", path)
		case !fi.Mode().IsRegular():
			return nil, fmt.Errorf("not a regular file: %s", path)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, opError(path, err)
	}
	if dir := filepath.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o700); err != nil {
			return nil, opError(path, err)
		}
	}
	// Opened without truncating, so that a file with other hard links (one
	// may live outside the workspace) is refused before anything changes;
	// the link count is read from the open file, not the path.
	flag := os.O_WRONLY | os.O_CREATE
	if appendMode {
		flag |= os.O_APPEND
	}
	f, err := root.OpenFile(rel, flag, 0o600)
	if err != nil {
		return nil, opError(path, err)
	}
	if fi, err := f.Stat(); err != nil {
		f.Close()
		return nil, opError(path, err)
	} else if err := RefuseHardLinks("write", path, fi); err != nil {
		f.Close()
		return nil, err
	}
	if !appendMode {
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, opError(path, err)
		}
	}
	n, err := f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, opError(path, err)
	}
	return tools.JSONResult(&writeResult{Path: display(rel), Bytes: n}), nil
}
