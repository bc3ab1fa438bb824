package logfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Tail limits, as the reference's logs.tail.
const (
	DefaultTailLimit    = 500
	DefaultTailMaxBytes = 250_000
	MaxTailLimit        = 5000
	MaxTailMaxBytes     = 1_000_000
)

// TailParams are logs.tail's parameters. Cursor is a byte offset returned
// by an earlier call; nil reads the end of the file.
type TailParams struct {
	Cursor   *int64
	Limit    int
	MaxBytes int
}

// TailResult is logs.tail's result: the lines read (without newlines), the
// cursor to continue from, and the file's size. Truncated says lines were
// left out (by MaxBytes or Limit); Reset says the cursor could not be
// continued from (the file was rotated or the reader fell too far behind),
// and SkippedBytes how much was jumped over in that case.
type TailResult struct {
	File         string   `json:"file"`
	Cursor       int64    `json:"cursor"`
	Size         int64    `json:"size"`
	Lines        []string `json:"lines"`
	Truncated    bool     `json:"truncated,omitempty"`
	Reset        bool     `json:"reset,omitempty"`
	SkippedBytes *int64   `json:"skippedBytes,omitempty"`
}

func clamp(v, lo, hi, def int) int {
	if v == 0 {
		v = def
	}
	return max(lo, min(hi, v))
}

// Tail reads whole lines from the log file at path: from the cursor when
// one is given, else the last MaxBytes. At most MaxBytes are read and at
// most Limit lines returned (the newest). A missing file reads as empty.
func Tail(path string, p TailParams) (TailResult, error) {
	res := TailResult{File: path, Lines: []string{}}
	maxBytes := int64(clamp(p.MaxBytes, 1, MaxTailMaxBytes, DefaultTailMaxBytes))
	limit := clamp(p.Limit, 1, MaxTailLimit, DefaultTailLimit)

	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		res.Reset = p.Cursor != nil && *p.Cursor > 0
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("logfile: tail: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return res, fmt.Errorf("logfile: tail: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return res, fmt.Errorf("logfile: tail: log path is not a regular file: %s", path)
	}
	size := fi.Size()
	res.Size = size

	var start int64
	switch {
	case p.Cursor == nil:
		start = max(0, size-maxBytes)
		res.Truncated = start > 0
	case *p.Cursor > size: // rotated or truncated under the reader
		res.Reset = true
		start = max(0, size-maxBytes)
		res.Truncated = start > 0
	default:
		start = max(0, *p.Cursor)
		if size-start > maxBytes {
			res.Reset, res.Truncated = true, true
			bounded := size - maxBytes
			skipped := bounded - start
			res.SkippedBytes = &skipped
			start = bounded
		}
	}
	if size == 0 || size <= start {
		res.Cursor = size
		return res, nil
	}

	// Whether start is at a line boundary: the byte before it is '\n'.
	atBoundary := start == 0
	if !atBoundary {
		var b [1]byte
		if _, err := f.ReadAt(b[:], start-1); err != nil {
			return res, fmt.Errorf("logfile: tail: %w", err)
		}
		atBoundary = b[0] == '\n'
	}
	buf := make([]byte, size-start)
	n, err := f.ReadAt(buf, start)
	if err != nil && !errors.Is(err, io.EOF) {
		return res, fmt.Errorf("logfile: tail: %w", err)
	}
	buf = buf[:n]
	last := bytes.LastIndexByte(buf, '\n')
	if last < 0 {
		// No whole line yet: nothing to return; the partial line is read
		// again next time.
		res.Cursor = start
		return res, nil
	}
	res.Cursor = start + int64(last) + 1
	body := buf[:last]
	if !atBoundary {
		// Drop the partial first line.
		i := bytes.IndexByte(buf, '\n')
		if i >= last {
			return res, nil
		}
		body = buf[i+1 : last]
	}
	lines := bytes.Split(body, []byte{'\n'})
	if len(lines) > limit {
		res.Truncated = true
		lines = lines[len(lines)-limit:]
	}
	for _, l := range lines {
		res.Lines = append(res.Lines, string(l))
	}
	return res, nil
}
