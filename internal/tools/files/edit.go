package files

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/switchboardhq/switchboard/internal/tools"
)

// EditToolName is the wire name of the edit tool.
const EditToolName = "edit"

var editSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path, relative to the workspace (an absolute path must lie inside it)."},
    "oldText": {"type": "string", "description": "Exact text to replace; it must occur exactly once in the file."},
    "newText": {"type": "string", "description": "Text to put in its place."},
    "edits": {
      "type": "array",
      "description": "Several replacements in one call, each matched against the original file; they must not overlap.",
      "items": {
        "type": "object",
        "properties": {
          "oldText": {"type": "string"},
          "newText": {"type": "string"}
        },
        "required": ["oldText", "newText"]
      }
    }
  },
  "required": ["path"]
}`)

type editTool struct{}

func (editTool) Name() string  { return EditToolName }
func (editTool) Label() string { return "Edit" }
func (editTool) Description() string {
	return "Replace exact text in a file of your workspace. Each oldText must appear exactly once; " +
		"several disjoint replacements can go in one call as edits[]."
}
func (editTool) Schema() json.RawMessage { return editSchema }

// editResult is edit's payload.
type editResult struct {
	// Changed is false when every replacement was identical to its text.
	Changed bool `json:"changed"`
	// FirstChangedLine is the first line that differs (1-based).
	FirstChangedLine int `json:"firstChangedLine,omitempty"`
}

// editArgs reads {path, oldText, newText, edits}: a top-level
// oldText/newText pair joins edits unless it is already there.
func editArgs(args json.RawMessage) (string, []replacement, error) {
	var in struct {
		Path    *string         `json:"path"`
		OldText *string         `json:"oldText"`
		NewText *string         `json:"newText"`
		Edits   json.RawMessage `json:"edits"`
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return "", nil, fmt.Errorf("invalid arguments: %w", err)
	}
	if in.Path == nil || *in.Path == "" {
		return "", nil, errors.New("path required")
	}
	var reps []replacement
	if len(in.Edits) > 0 && string(in.Edits) != "null" {
		raw := in.Edits
		// Models sometimes send the array as a JSON string.
		var s string
		if json.Unmarshal(raw, &s) == nil {
			raw = json.RawMessage(s)
		}
		var items []map[string]any
		if err := json.Unmarshal(raw, &items); err != nil {
			return "", nil, errors.New("Edit tool input is invalid. edits must be an array of {oldText, newText}.")
		}
		for i, it := range items {
			o, ok1 := it["oldText"].(string)
			n, ok2 := it["newText"].(string)
			if !ok1 || !ok2 {
				return "", nil, fmt.Errorf("Edit tool input is invalid. edits[%d] needs string oldText and newText.", i)
			}
			reps = append(reps, replacement{OldText: o, NewText: n})
		}
	}
	if in.OldText != nil && in.NewText != nil {
		top := replacement{OldText: *in.OldText, NewText: *in.NewText}
		dup := false
		for _, r := range reps {
			dup = dup || r == top
		}
		if !dup {
			reps = append(reps, top)
		}
	}
	if len(reps) == 0 {
		return "", nil, errors.New("Edit tool input is invalid. edits must contain at least one replacement.")
	}
	return *in.Path, reps, nil
}

// Call applies {path, oldText, newText} (or edits[]) to a file of the
// workspace. Nothing is written unless every replacement matches exactly
// once; the file keeps its mode, and one with other hard links is refused
// as write refuses it.
func (editTool) Call(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
	path, reps, err := editArgs(args)
	if err != nil {
		return nil, err
	}
	root, rel, err := openPath(ctx, path)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if fi, err := root.Stat(rel); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("is a directory: %s", path)
	}
	f, err := root.OpenFile(rel, os.O_RDWR, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("Could not edit file: %s. Error code: ENOENT.", path)
		}
		return nil, opError(path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, opError(path, err)
	}
	switch {
	case fi.IsDir():
		return nil, fmt.Errorf("is a directory: %s", path)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("not a regular file: %s", path)
	case fi.Size() > MaxWriteBytes:
		return nil, fmt.Errorf("file too large to edit: %s is %d bytes (max %d)", path, fi.Size(), MaxWriteBytes)
	}
	if err := RefuseHardLinks("edit", path, fi); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxWriteBytes+1))
	if err != nil {
		return nil, opError(path, err)
	}
	before := string(data)
	var real []replacement
	for _, r := range reps {
		if r.OldText != r.NewText {
			real = append(real, r)
		}
	}
	// Replacements that change nothing must still name existing, unique,
	// non-overlapping text.
	check := make([]replacement, len(reps))
	for i, r := range reps {
		check[i] = replacement{OldText: r.OldText, NewText: ""}
	}
	if _, err := applyReplacements(before, check, path); err != nil && !errors.Is(err, errNoChange) {
		return nil, err
	}
	if len(real) == 0 {
		return &tools.Result{Details: &editResult{}, Text: fmt.Sprintf("No changes made to %s. The replacement text is identical to the original.", path)}, nil
	}
	after, err := applyReplacements(before, real, path)
	if errors.Is(err, errNoChange) {
		return &tools.Result{Details: &editResult{}, Text: fmt.Sprintf("No changes made to %s. The replacement produced identical content.", path)}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := f.Truncate(0); err != nil {
		return nil, opError(path, err)
	}
	if _, err := f.WriteAt([]byte(after), 0); err != nil {
		return nil, opError(path, err)
	}
	if err := f.Close(); err != nil {
		return nil, opError(path, err)
	}
	return &tools.Result{
		Details: &editResult{Changed: true, FirstChangedLine: firstChangedLine(before, after)},
		Text:    fmt.Sprintf("Successfully replaced %d block(s) in %s.", len(real), path),
	}, nil
}
