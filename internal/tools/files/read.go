package files

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard/internal/tools"
)

var readSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path, relative to the workspace (an absolute path must lie inside it)."},
    "offset": {"type": "number", "minimum": 1, "description": "1-based line number to start reading at (default 1)."},
    "limit": {"type": "number", "minimum": 1, "description": "Maximum number of lines to return (default: as many as fit)."}
  },
  "required": ["path"]
}`)

type readTool struct{}

func (readTool) Name() string  { return ReadToolName }
func (readTool) Label() string { return "Read" }
func (readTool) Description() string {
	return "Read a text file in your workspace. offset and limit count lines (offset is 1-based). " +
		"At most 256 KiB is returned per call; when more follows, the result has nextOffset to continue from."
}
func (readTool) Schema() json.RawMessage { return readSchema }

// readResult is read's payload.
type readResult struct {
	// Path is the file's real path relative to the workspace.
	Path string `json:"path"`
	// Bytes is the file's size.
	Bytes int64 `json:"bytes"`
	// Offset is the line Content starts at; Lines counts its lines (a
	// last line without a newline counts).
	Offset  int    `json:"offset"`
	Lines   int    `json:"lines"`
	Content string `json:"content"`
	// Truncated is set when the 256 KiB output cap cut the content short.
	Truncated bool `json:"truncated"`
	// NextOffset is the line to continue from when more of the file
	// follows (because of the cap or of limit).
	NextOffset int    `json:"nextOffset,omitempty"`
	Note       string `json:"note,omitempty"`
}

// Call reads {path, offset?, limit?}: lines offset.. of the file, at most
// limit lines and at most MaxReadBytes bytes. Output stops at a line
// boundary when it can; a first line longer than the cap is cut (at a
// UTF-8 boundary) and reading continues with the next line.
func (readTool) Call(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
	p, err := tools.ParseParams(args)
	if err != nil {
		return nil, err
	}
	path, err := pathParam(p, "")
	if err != nil {
		return nil, err
	}
	offset, _ := p.Int("offset", 1)
	if offset == 0 {
		offset = 1
	}
	limit, _ := p.Int("limit", 1) // 0: no limit
	root, rel, err := openPath(ctx, path)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if fi, err := root.Stat(rel); err != nil {
		return nil, opError(path, err)
	} else if fi.IsDir() {
		return nil, fmt.Errorf("is a directory: %s (use ls)", path)
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file: %s", path)
	}
	f, err := root.Open(rel)
	if err != nil {
		return nil, opError(path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, opError(path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file: %s", path)
	}
	if err := RefuseHardLinks("read", path, fi); err != nil {
		return nil, err
	}
	res := &readResult{Path: display(rel), Bytes: fi.Size(), Offset: offset}
	if err := readLines(bufio.NewReaderSize(f, 64<<10), res, offset, limit); err != nil {
		return nil, opError(path, err)
	}
	return tools.JSONResult(res), nil
}

// readLines fills res from br: lines offset.., at most limit (0 = any)
// lines and MaxReadBytes bytes.
func readLines(br *bufio.Reader, res *readResult, offset, limit int) error {
	line := 1
	for ; line < offset; line++ {
		if err := skipLine(br); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
	var out []byte
	for {
		if limit > 0 && res.Lines >= limit {
			if _, err := br.Peek(1); err == nil {
				res.NextOffset = line
				res.Note = fmt.Sprintf("more lines follow; continue with offset=%d", line)
			}
			break
		}
		data, long, err := readLine(br, MaxReadBytes-len(out))
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if long {
			res.Truncated = true
			if res.Lines == 0 {
				out = append(out, validPrefix(data)...)
				res.Lines = 1
				res.NextOffset = line + 1
				res.Note = fmt.Sprintf("line %d is longer than %d bytes and was cut; continue with offset=%d", line, MaxReadBytes, line+1)
			} else {
				res.NextOffset = line
				res.Note = fmt.Sprintf("output truncated at %d bytes; continue with offset=%d", MaxReadBytes, line)
			}
			break
		}
		out = append(out, data...)
		res.Lines++
		line++
	}
	res.Content = string(out)
	return nil
}

// readLine reads one line (with its newline) of at most max bytes. When
// the line is longer it returns its first max bytes and long, leaving the
// rest unread. At the end of the input it returns io.EOF.
func readLine(br *bufio.Reader, max int) (data []byte, long bool, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		if len(data)+len(frag) > max {
			return append(data, frag[:max-len(data)]...), true, nil
		}
		data = append(data, frag...)
		switch {
		case err == nil:
			return data, false, nil
		case errors.Is(err, bufio.ErrBufferFull):
		case err == io.EOF:
			if len(data) == 0 {
				return nil, false, io.EOF
			}
			return data, false, nil
		default:
			return nil, false, err
		}
	}
}

// skipLine consumes one line; io.EOF when there is none.
func skipLine(br *bufio.Reader) error {
	n := 0
	for {
		frag, err := br.ReadSlice('\n')
		n += len(frag)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, bufio.ErrBufferFull):
		case err == io.EOF:
			if n == 0 {
				return io.EOF
			}
			return nil
		default:
			return err
		}
	}
}

// validPrefix drops an incomplete UTF-8 sequence at the end of b.
func validPrefix(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}
