package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"
)

// Read defaults, the reference's.
const (
	// DefaultReadLines is the excerpt length when lines is not given.
	DefaultReadLines = 120
	// ReadMaxChars caps an excerpt's text.
	ReadMaxChars = 12000
)

// ReadResult is memory_get's payload in the reference's shape: Status "ok"
// with the excerpt, "not_found", or "error" with Code and Error.
type ReadResult struct {
	Status    string `json:"status"`
	Text      string `json:"text"`
	Path      string `json:"path"`
	From      int    `json:"from,omitempty"`
	Lines     *int   `json:"lines,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	NextFrom  int    `json:"nextFrom,omitempty"`
	Code      string `json:"code,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Read returns lines lines of the memory file p of workspace from line from
// (1-based; <= 0 means 1; lines <= 0 means DefaultReadLines), within
// ReadMaxChars, as memory_get does. A path that is not a memory file, a
// link or an unreadable file gives an "error" result; only a blank path is
// an error of the call.
func Read(workspace, p string, from, lines int) (*ReadResult, error) {
	if strings.TrimSpace(p) == "" {
		return nil, errors.New("path required")
	}
	rel, err := NormalizePath(workspace, p)
	if err != nil {
		return &ReadResult{Status: "error", Path: strings.TrimSpace(p), Code: "MEMORY_PATH_NOT_ALLOWED", Error: err.Error()}, nil
	}
	b, _, err := readFile(os.Lstat, workspace, rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &ReadResult{Status: "not_found", Path: rel}, nil
	case errors.Is(err, errLinked):
		return &ReadResult{Status: "error", Path: rel, Code: "MEMORY_PATH_NOT_ALLOWED",
			Error: fmt.Sprintf("%s: %v", ErrPathNotAllowed, err)}, nil
	case err != nil:
		return &ReadResult{Status: "error", Path: rel, Code: "MEMORY_READ_FAILED", Error: err.Error()}, nil
	}
	return excerpt(rel, string(b), from, lines, ReadMaxChars), nil
}

// excerpt cuts the requested lines of content to maxChars at line
// boundaries and adds the reference's continuation notice when more
// remains.
func excerpt(rel, content string, from, count, maxChars int) *ReadResult {
	fileLines := strings.Split(content, "\n")
	if fileLines[len(fileLines)-1] == "" {
		fileLines = fileLines[:len(fileLines)-1]
	}
	if from < 1 {
		from = 1
	}
	if count < 1 {
		count = DefaultReadLines
	}
	var selected []string
	if from-1 < len(fileLines) {
		selected = fileLines[from-1 : min(len(fileLines), from-1+count)]
	}
	moreSource := from-1+len(selected) < len(fileLines)
	// Fit whole lines to the budget; a first line over it is cut.
	included, chars := 0, 0
	for _, l := range selected {
		next := chars + utf8.RuneCountInString(l)
		if included > 0 {
			next++
		}
		if included > 0 && next > maxChars {
			break
		}
		included++
		chars = next
	}
	hardCut := chars > maxChars
	text := truncateRunes(strings.Join(selected[:included], "\n"), maxChars)
	truncated := hardCut || included < len(selected) || moreSource
	res := &ReadResult{Status: "ok", Path: rel, From: from, Lines: &included, Truncated: truncated}
	if !hardCut && (moreSource || included < len(selected)) {
		res.NextFrom = from + included
	}
	if truncated && (text != "" || hardCut) {
		notice := "[More content available. Requested excerpt exceeded the default maxChars budget.]"
		if res.NextFrom > 0 {
			notice = fmt.Sprintf("[More content available. Use from=%d to continue.]", res.NextFrom)
		}
		if hardCut {
			notice = strings.TrimSuffix(notice, "]") + " If you need the full raw line, use read on the source file.]"
		}
		text += "\n\n" + notice
	}
	res.Text = text
	return res
}
