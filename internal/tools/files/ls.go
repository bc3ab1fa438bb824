package files

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard/internal/tools"
)

// Limits of the ls tool, the reference's.
const (
	// DefaultLsLimit is the number of entries one ls lists when the call
	// gives no limit.
	DefaultLsLimit = 500
	// MaxLsBytes caps the text of one ls page, continuation line included.
	MaxLsBytes = 51200
)

var lsSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Directory to list; the workspace when omitted."},
    "limit": {"type": "number", "description": "Most entries to list; 500 when omitted."},
    "after": {"type": "string", "description": "Cursor from the previous page: only names after it are listed."}
  }
}`)

// lsTool is the reference's ls: one page of a directory's entries, one
// JSON-quoted name per line.
type lsTool struct{}

func (lsTool) Name() string  { return LsToolName }
func (lsTool) Label() string { return "ls" }
func (lsTool) Description() string {
	return "List the entries of a directory, dotfiles and links included, sorted by the bytes of their names. " +
		"Each name is printed as a JSON string; a trailing / marks a real directory. " +
		"When more entries remain, call again with the same path and the after cursor it gives."
}
func (lsTool) Schema() json.RawMessage { return lsSchema }

// lsResult is ls's details: the page's text and, when entries remain,
// the cursor of the next page.
type lsResult struct {
	Content   string `json:"content"`
	NextAfter string `json:"nextAfter,omitempty"`
}

// lsEntry is one directory entry as ls shows it.
type lsEntry struct {
	name  string
	isDir bool
}

// Call lists {path? = ".", limit? = 500, after?}: the entries named after
// the cursor, in byte order of their names, at most limit of them and
// MaxLsBytes of text.
func (lsTool) Call(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
	p, err := tools.ParseParams(args)
	if err != nil {
		return nil, err
	}
	dirPath, _ := pathParam(p, ".")
	after, hasAfter := p["after"].(string)
	entries, err := readWorkspaceDir(ctx, dirPath)
	if err != nil {
		return nil, err
	}
	if hasAfter {
		entries = slices.DeleteFunc(entries, func(e lsEntry) bool { return e.name <= after })
	}
	slices.SortFunc(entries, func(a, b lsEntry) int { return strings.Compare(a.name, b.name) })
	res, err := lsPage(entries, lsLimit(p))
	if err != nil {
		return nil, err
	}
	return &tools.Result{Details: res, Text: res.Content}, nil
}

// lsLimit is the limit argument as the reference normalizes it: a finite
// number is floored and raised to at least 1; anything else is the
// default.
func lsLimit(p tools.Params) int {
	f, ok := p.Number("limit")
	if !ok {
		return DefaultLsLimit
	}
	f = math.Floor(f)
	switch {
	case f < 1:
		return 1
	case f > math.MaxInt32:
		return math.MaxInt32
	}
	return int(f)
}

// readWorkspaceDir returns the entries of the workspace directory dirPath
// (confined like every file tool: a path leading out of the workspace is
// refused, links inside the directory are listed, not followed).
func readWorkspaceDir(ctx context.Context, dirPath string) ([]lsEntry, error) {
	root, rel, err := openPath(ctx, dirPath)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	fi, err := root.Stat(rel)
	if err != nil {
		return nil, scandirError(dirPath, err)
	}
	if !fi.IsDir() {
		return nil, scandirError(dirPath, syscall.ENOTDIR)
	}
	ents, err := fs.ReadDir(root.FS(), display(rel))
	if err != nil {
		return nil, scandirError(dirPath, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]lsEntry, len(ents))
	for i, d := range ents {
		// DirEntry.IsDir is false for a link, like Node's Dirent.
		out[i] = lsEntry{name: d.Name(), isDir: d.IsDir()}
	}
	return out, nil
}

// scandirError is the message Node's readdir fails with for the common
// errors ("ENOENT: no such file or directory, scandir 'x'"), naming the
// path as the caller passed it; other errors are opError's.
func scandirError(p string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var text string
	switch {
	case errors.Is(err, os.ErrNotExist):
		text = "ENOENT: no such file or directory"
	case errors.Is(err, syscall.ENOTDIR):
		text = "ENOTDIR: not a directory"
	case errors.Is(err, os.ErrPermission):
		text = "EACCES: permission denied"
	case errors.Is(err, syscall.ELOOP):
		text = "ELOOP: too many symbolic links encountered"
	default:
		return opError(p, err)
	}
	return fmt.Errorf("%s, scandir '%s'", text, p)
}

// lsPage renders sorted entries as one page: the longest prefix of at most
// limit lines whose text, with the continuation line when entries remain,
// fits MaxLsBytes.
func lsPage(entries []lsEntry, limit int) (*lsResult, error) {
	if len(entries) == 0 {
		return &lsResult{Content: "(empty directory)"}, nil
	}
	var lines []string
	size := 0 // bytes of the lines joined by "\n"
	for _, e := range entries {
		if len(lines) >= limit {
			break
		}
		line := lsLine(e)
		n := size + len(line)
		if len(lines) > 0 {
			n++
		}
		if n > MaxLsBytes {
			break
		}
		lines = append(lines, line)
		size = n
	}
	for ; len(lines) > 0; lines = lines[:len(lines)-1] {
		res := &lsResult{Content: strings.Join(lines, "\n")}
		if len(lines) < len(entries) {
			res.NextAfter = entries[len(lines)-1].name
			res.Content += lsContinuation(res.NextAfter)
		}
		if len(res.Content) <= MaxLsBytes {
			return res, nil
		}
	}
	return nil, errors.New("a directory entry cannot fit within the listing output budget")
}

// lsLine is an entry's line: its name, with "/" for a directory, as a JSON
// string.
func lsLine(e lsEntry) string {
	if e.isDir {
		return jsQuote(e.name + "/")
	}
	return jsQuote(e.name)
}

// lsContinuation is the line that tells the model how to get the next
// page.
func lsContinuation(after string) string {
	return "\n\n[More entries. Continue with the same path and after=" + jsQuote(after) + ".]"
}

// jsQuote is JavaScript's JSON.stringify of s: only '"', '\\' and control
// characters are escaped (not '<', '>', '&', U+2028 or U+2029, which
// encoding/json escapes); bytes that are not UTF-8 become U+FFFD, as Node
// decodes file names.
func jsQuote(s string) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteRune(r) // an invalid byte is written as U+FFFD
		}
	}
	b.WriteByte('"')
	return b.String()
}
