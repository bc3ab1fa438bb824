package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxLineLength is the longest line, in bytes without the line
// terminator, a Decoder accepts unless told otherwise.
const DefaultMaxLineLength = 16 << 20

// LineError is an error about one line of a JSONL transcript.
type LineError struct {
	Line int   // 1-based
	Err  error // what is wrong with the line
}

// Error returns "transcript: line N: <Err>".
func (e *LineError) Error() string { return fmt.Sprintf("transcript: line %d: %v", e.Line, e.Err) }

// Unwrap returns e.Err.
func (e *LineError) Unwrap() error { return e.Err }

// ParseLine parses one entry line (any line but the header). It checks that
// the line is a JSON object whose known fields have the right types, with a
// non-empty type other than "session", a non-empty id and, for message
// entries, a message. It cannot check ids against other lines; Decoder does.
func ParseLine(line []byte) (Entry, error) {
	e, err := parseEntry(line)
	if err != nil {
		return Entry{}, fmt.Errorf("transcript: %w", err)
	}
	return e, nil
}

// ParseHeader parses a header line: a JSON object with type "session" and a
// non-empty id. Any version is accepted.
func ParseHeader(line []byte) (Header, error) {
	h, err := parseHeader(line)
	if err != nil {
		return Header{}, fmt.Errorf("transcript: %w", err)
	}
	return h, nil
}

func parseEntry(line []byte) (Entry, error) {
	var e Entry
	if err := parseObject(entryCodec.Get(), &e, line); err != nil {
		return Entry{}, err
	}
	return e, checkEntry(&e)
}

func parseHeader(line []byte) (Header, error) {
	var h Header
	if err := parseObject(headerCodec.Get(), &h, line); err != nil {
		return Header{}, err
	}
	return h, checkHeader(&h)
}

func parseObject[T any](c *codec[T], v *T, line []byte) error {
	line = trimSpace(line)
	if len(line) == 0 {
		return errors.New("empty line")
	}
	if !json.Valid(line) {
		return syntaxError(line)
	}
	_, err := c.decode(v, line)
	return err
}

func checkHeader(h *Header) error {
	if h.Type != TypeSession {
		return fmt.Errorf("want a header of type %q, got type %q", TypeSession, h.Type)
	}
	if h.ID == "" {
		return errors.New("header without id")
	}
	return nil
}

func checkEntry(e *Entry) error {
	switch {
	case e.Type == "":
		return errors.New("entry without type")
	case e.Type == TypeSession:
		return errors.New("unexpected session header")
	case e.ID == "":
		return fmt.Errorf("%s entry without id", e.Type)
	case e.Type == TypeMessage && e.Message == nil:
		return fmt.Errorf("message entry %q without message", e.ID)
	}
	return nil
}

// tree tracks entry ids to enforce the linking rules shared by Decoder and
// Encoder: ids are unique, and a parentId names an earlier entry.
type tree struct {
	lines map[string]int // id → line
}

func (t *tree) add(e *Entry, line int) error {
	if first, ok := t.lines[e.ID]; ok {
		return fmt.Errorf("duplicate id %q (first on line %d)", e.ID, first)
	}
	if e.ParentID != nil {
		if _, ok := t.lines[*e.ParentID]; !ok {
			return fmt.Errorf("entry %q: parentId %q does not name an earlier entry", e.ID, *e.ParentID)
		}
	}
	if t.lines == nil {
		t.lines = make(map[string]int)
	}
	t.lines[e.ID] = line
	return nil
}

// Decoder reads a JSONL transcript one line at a time, so a large transcript
// is never held in memory. The first non-blank line must be a header; blank
// lines are skipped. Every error is a *LineError naming the 1-based line, and
// errors are sticky: once a call fails, later calls return the same error.
// It remembers every entry id it has read, to check parentId links. A
// Decoder is not safe for concurrent use.
type Decoder struct {
	r       *bufio.Reader
	max     int
	line    int // lines read so far
	buf     []byte
	started bool
	header  Header
	tree    tree
	err     error
}

// NewDecoder returns a Decoder reading from r. It buffers r.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, 64<<10), max: DefaultMaxLineLength}
}

// SetMaxLineLength sets the longest line accepted, in bytes without the line
// terminator; n <= 0 restores DefaultMaxLineLength. A longer line is an
// error; it is never read into memory whole. Call it before reading.
func (d *Decoder) SetMaxLineLength(n int) {
	if n <= 0 {
		n = DefaultMaxLineLength
	}
	d.max = n
}

// Header returns the transcript header, reading it on first use.
func (d *Decoder) Header() (Header, error) {
	if !d.started {
		d.started = true
		line, err := d.nextLine()
		switch {
		case err == io.EOF:
			d.err = &LineError{Line: d.line + 1, Err: errors.New("missing session header")}
		case err != nil:
			d.err = err
		default:
			h, err := parseHeader(line)
			if err != nil {
				d.err = &LineError{Line: d.line, Err: err}
			}
			d.header = h
		}
	}
	if d.err != nil && d.err != io.EOF {
		return Header{}, d.err
	}
	return d.header, nil
}

// Next returns the next entry, or io.EOF after the last one. It reads the
// header first if Header has not been called.
func (d *Decoder) Next() (Entry, error) {
	if _, err := d.Header(); err != nil {
		return Entry{}, err
	}
	if d.err != nil {
		return Entry{}, d.err
	}
	line, err := d.nextLine()
	if err != nil {
		d.err = err
		return Entry{}, err
	}
	e, err := parseEntry(line)
	if err == nil {
		err = d.tree.add(&e, d.line)
	}
	if err != nil {
		d.err = &LineError{Line: d.line, Err: err}
		return Entry{}, d.err
	}
	return e, nil
}

// nextLine returns the next non-blank line without its terminator, valid
// until the following call, or io.EOF.
func (d *Decoder) nextLine() ([]byte, error) {
	for {
		line, err := d.readLine()
		if err != nil {
			return nil, err
		}
		if line = trimSpace(line); len(line) > 0 {
			return line, nil
		}
	}
}

func (d *Decoder) readLine() ([]byte, error) {
	if cap(d.buf) > 1<<20 {
		d.buf = nil // do not pin the memory of one huge line
	}
	d.buf = d.buf[:0]
	for {
		chunk, err := d.r.ReadSlice('\n')
		line := chunk // the common case: a whole line, not copied
		if len(d.buf) > 0 || err == bufio.ErrBufferFull {
			// chunk is overwritten by the next read: accumulate a copy.
			d.buf = append(d.buf, chunk...)
			line = d.buf
		}
		if err == bufio.ErrBufferFull {
			if len(line) > d.max+1 { // +1: a '\r' before the '\n'
				d.line++
				return nil, d.tooLong()
			}
			continue
		}
		if err == io.EOF {
			if len(line) == 0 {
				return nil, io.EOF
			}
		} else if err != nil {
			return nil, &LineError{Line: d.line + 1, Err: fmt.Errorf("read: %w", err)}
		}
		d.line++
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > d.max {
			return nil, d.tooLong()
		}
		return line, nil
	}
}

func (d *Decoder) tooLong() error {
	return &LineError{Line: d.line, Err: fmt.Errorf("line longer than %d bytes", d.max)}
}

// ReadJSONL reads a whole JSONL transcript. See Decoder for the rules.
func ReadJSONL(r io.Reader) (Header, []Entry, error) {
	d := NewDecoder(r)
	h, err := d.Header()
	if err != nil {
		return Header{}, nil, err
	}
	var entries []Entry
	for {
		e, err := d.Next()
		if err == io.EOF {
			return h, entries, nil
		}
		if err != nil {
			return Header{}, nil, err
		}
		entries = append(entries, e)
	}
}

// Encoder writes a JSONL transcript one line at a time: WriteHeader once,
// then WriteEntry for each entry. It enforces the rules Decoder checks, so
// what it writes can be read back; errors are *LineError values naming the
// line that would have been written, and are sticky. Each line is one Write
// call to the underlying writer, which the Encoder does not buffer. An
// Encoder is not safe for concurrent use.
type Encoder struct {
	w       io.Writer
	buf     []byte
	line    int // lines written
	started bool
	tree    tree
	err     error
}

// NewEncoder returns an Encoder writing to w.
func NewEncoder(w io.Writer) *Encoder { return &Encoder{w: w} }

// WriteHeader writes the header line. It must be called once, first; h must
// have type "session" and a non-empty id.
func (e *Encoder) WriteHeader(h Header) error {
	if e.err != nil {
		return e.err
	}
	if e.started {
		e.err = &LineError{Line: e.line + 1, Err: errors.New("header already written")}
		return e.err
	}
	e.started = true
	if err := checkHeader(&h); err != nil {
		e.err = &LineError{Line: e.line + 1, Err: err}
		return e.err
	}
	b, err := headerCodec.Get().encode(e.buf[:0], &h)
	return e.write(b, err)
}

// WriteEntry writes one entry line. The entry must have a non-empty type
// and id, an id not used before in this transcript, and a ParentID that is
// nil or names an earlier entry.
func (e *Encoder) WriteEntry(en Entry) error {
	if e.err != nil {
		return e.err
	}
	if !e.started {
		e.err = &LineError{Line: e.line + 1, Err: errors.New("entry before header")}
		return e.err
	}
	err := checkEntry(&en)
	if err == nil {
		err = e.tree.add(&en, e.line+1)
	}
	if err != nil {
		e.err = &LineError{Line: e.line + 1, Err: err}
		return e.err
	}
	b, err := entryCodec.Get().encode(e.buf[:0], &en)
	return e.write(b, err)
}

func (e *Encoder) write(b []byte, err error) error {
	if err != nil {
		e.err = &LineError{Line: e.line + 1, Err: err}
		return e.err
	}
	b = append(b, '\n')
	e.buf = b
	if cap(e.buf) > 1<<20 {
		e.buf = nil // do not pin the memory of one huge line
	}
	if _, err := e.w.Write(b); err != nil {
		e.err = &LineError{Line: e.line + 1, Err: fmt.Errorf("write: %w", err)}
		return e.err
	}
	e.line++
	return nil
}

// WriteJSONL writes h and entries as a JSONL transcript. See Encoder for the
// rules.
func WriteJSONL(w io.Writer, h Header, entries []Entry) error {
	enc := NewEncoder(w)
	if err := enc.WriteHeader(h); err != nil {
		return err
	}
	for _, en := range entries {
		if err := enc.WriteEntry(en); err != nil {
			return err
		}
	}
	return nil
}
