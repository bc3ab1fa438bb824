package files

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Markers of the patch format.
const (
	beginPatch   = "*** Begin Patch"
	endPatch     = "*** End Patch"
	addFile      = "*** Add File: "
	deleteFile   = "*** Delete File: "
	updateFile   = "*** Update File: "
	moveTo       = "*** Move to: "
	endOfFile    = "*** End of File"
	contextMark  = "@@ "
	contextEmpty = "@@"
)

// patchOp is one file operation of a patch.
type patchOp struct {
	kind     byte // 'A'dd, 'D'elete, 'U'pdate
	path     string
	movePath string // update only; "" when the file keeps its name
	contents string // add only
	chunks   []patchChunk
}

// patchChunk is one @@ section of an update.
type patchChunk struct {
	// context is the text after "@@ " ("" for none): a line the old lines
	// follow.
	context            string
	oldLines, newLines []string
	// eof anchors the old lines at the end of the file.
	eof bool
}

// parsePatch parses the *** Begin Patch … *** End Patch envelope (also
// accepted wrapped in a <<EOF heredoc) into its operations, with the
// reference's error messages.
func parsePatch(input string) ([]patchOp, error) {
	trimmed := strings.TrimSpace(input)
	if trimmed == "" {
		return nil, errors.New("Invalid patch: input is empty.")
	}
	lines := strings.Split(strings.ReplaceAll(trimmed, "\r\n", "\n"), "\n")
	lines, err := patchBoundaries(lines)
	if err != nil {
		return nil, err
	}
	var ops []patchOp
	rest := lines[1 : len(lines)-1]
	lineNo := 2
	for len(rest) > 0 {
		op, n, err := parseOp(rest, lineNo)
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
		rest = rest[n:]
		lineNo += n
	}
	return ops, nil
}

// patchBoundaries checks the first and last lines, unwrapping a heredoc.
func patchBoundaries(lines []string) ([]string, error) {
	check := func(ls []string) error {
		switch {
		case len(ls) == 0 || strings.TrimSpace(ls[0]) != beginPatch:
			return errors.New("The first line of the patch must be '*** Begin Patch'")
		case len(ls) < 2 || strings.TrimSpace(ls[len(ls)-1]) != endPatch:
			return errors.New("The last line of the patch must be '*** End Patch'")
		}
		return nil
	}
	err := check(lines)
	if err == nil {
		return lines, nil
	}
	if len(lines) >= 4 {
		first, last := lines[0], lines[len(lines)-1]
		if (first == "<<EOF" || first == "<<'EOF'" || first == `<<"EOF"`) && strings.HasSuffix(last, "EOF") {
			inner := lines[1 : len(lines)-1]
			if err := check(inner); err != nil {
				return nil, err
			}
			return inner, nil
		}
	}
	return nil, err
}

// parseOp parses the operation at the start of lines and returns how many
// lines it used.
func parseOp(lines []string, lineNo int) (patchOp, int, error) {
	first := strings.TrimSpace(lines[0])
	switch {
	case strings.HasPrefix(first, addFile):
		op := patchOp{kind: 'A', path: first[len(addFile):]}
		var b strings.Builder
		n := 1
		for _, l := range lines[1:] {
			if !strings.HasPrefix(l, "+") {
				break
			}
			b.WriteString(l[1:])
			b.WriteByte('\n')
			n++
		}
		op.contents = b.String()
		return op, n, nil
	case strings.HasPrefix(first, deleteFile):
		return patchOp{kind: 'D', path: first[len(deleteFile):]}, 1, nil
	case strings.HasPrefix(first, updateFile):
		op := patchOp{kind: 'U', path: first[len(updateFile):]}
		rest, n := lines[1:], 1
		if len(rest) > 0 && strings.HasPrefix(strings.TrimSpace(rest[0]), moveTo) {
			op.movePath = strings.TrimSpace(rest[0])[len(moveTo):]
			rest, n = rest[1:], n+1
		}
		for len(rest) > 0 {
			if strings.TrimSpace(rest[0]) == "" {
				rest, n = rest[1:], n+1
				continue
			}
			if strings.HasPrefix(rest[0], "***") {
				break
			}
			c, used, err := parseChunk(rest, lineNo+n, len(op.chunks) == 0)
			if err != nil {
				return op, 0, err
			}
			op.chunks = append(op.chunks, c)
			rest, n = rest[used:], n+used
		}
		if len(op.chunks) == 0 {
			return op, 0, fmt.Errorf("Invalid patch hunk at line %d: Update file hunk for path '%s' is empty", lineNo, op.path)
		}
		return op, n, nil
	}
	return patchOp{}, 0, fmt.Errorf("Invalid patch hunk at line %d: '%s' is not a valid hunk header. "+
		"Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'", lineNo, lines[0])
}

// parseChunk parses one @@ section; the first of a file may omit "@@".
func parseChunk(lines []string, lineNo int, first bool) (patchChunk, int, error) {
	var c patchChunk
	start := 0
	switch {
	case lines[0] == contextEmpty:
		start = 1
	case strings.HasPrefix(lines[0], contextMark):
		c.context, start = lines[0][len(contextMark):], 1
	case !first:
		return c, 0, fmt.Errorf("Invalid patch hunk at line %d: Expected update hunk to start with a @@ context marker, got: '%s'", lineNo, lines[0])
	}
	if start >= len(lines) {
		return c, 0, fmt.Errorf("Invalid patch hunk at line %d: Update hunk does not contain any lines", lineNo+1)
	}
	parsed := 0
	for _, l := range lines[start:] {
		if l == endOfFile {
			if parsed == 0 {
				return c, 0, fmt.Errorf("Invalid patch hunk at line %d: Update hunk does not contain any lines", lineNo+1)
			}
			c.eof = true
			parsed++
			break
		}
		if l == "" {
			c.oldLines = append(c.oldLines, "")
			c.newLines = append(c.newLines, "")
			parsed++
			continue
		}
		switch l[0] {
		case ' ':
			c.oldLines = append(c.oldLines, l[1:])
			c.newLines = append(c.newLines, l[1:])
		case '+':
			c.newLines = append(c.newLines, l[1:])
		case '-':
			c.oldLines = append(c.oldLines, l[1:])
		default:
			if parsed == 0 {
				return c, 0, fmt.Errorf("Invalid patch hunk at line %d: Unexpected line found in update hunk: '%s'. "+
					"Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)", lineNo+1, l)
			}
			return c, parsed + start, nil
		}
		parsed++
	}
	return c, parsed + start, nil
}

// seekLines finds pattern in lines at or after from: exactly, else
// ignoring trailing, else surrounding whitespace. With eof a match ending
// at the last line is preferred. It returns the index, or -1 with the
// number of matches (0 or more than 1).
func seekLines(lines, pattern []string, from int, eof bool) (int, int) {
	if len(pattern) == 0 {
		return from, 1
	}
	for _, norm := range []func(string) string{
		func(s string) string { return s },
		func(s string) string { return strings.TrimRight(s, " \t") },
		strings.TrimSpace,
	} {
		if eof {
			if i := len(lines) - len(pattern); i >= from && equalLines(lines[i:], pattern, norm) {
				return i, 1
			}
		}
		found, count := -1, 0
		for i := from; i+len(pattern) <= len(lines); i++ {
			if equalLines(lines[i:i+len(pattern)], pattern, norm) {
				if count == 0 {
					found = i
				}
				count++
			}
		}
		if count == 1 {
			return found, 1
		}
		if count > 1 {
			return -1, count
		}
	}
	return -1, 0
}

func equalLines(a, b []string, norm func(string) string) bool {
	for i := range b {
		if norm(a[i]) != norm(b[i]) {
			return false
		}
	}
	return true
}

// applyChunks applies an update's chunks to text and returns the new text.
// A file whose every newline is CRLF keeps CRLF; whether it ends with a
// newline is kept too.
func applyChunks(text string, chunks []patchChunk, path string) (string, error) {
	bom := ""
	if strings.HasPrefix(text, "\ufeff") {
		bom, text = "\ufeff", text[len("\ufeff"):]
	}
	crlf := strings.Contains(text, "\r\n") && strings.Count(text, "\r\n") == strings.Count(text, "\n")
	if crlf {
		text = strings.ReplaceAll(text, "\r\n", "\n")
	}
	finalNL := strings.HasSuffix(text, "\n")
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if text == "" {
		lines = nil
	}
	type repl struct {
		at, n int
		with  []string
	}
	var repls []repl
	idx := 0
	for _, c := range chunks {
		if c.context != "" {
			i, count := seekLines(lines, []string{c.context}, idx, false)
			if count > 1 {
				return "", fmt.Errorf("Found %d occurrences of context '%s' in %s. The context must be unique; use a more specific @@ context line.", count, c.context, path)
			}
			if i < 0 {
				return "", fmt.Errorf("Failed to find context '%s' in %s", c.context, path)
			}
			idx = i + 1
		}
		if len(c.oldLines) == 0 {
			at := len(lines)
			if c.context != "" && !c.eof {
				at = idx
			}
			repls = append(repls, repl{at: at, with: c.newLines})
			idx = at
			continue
		}
		pattern, with := c.oldLines, c.newLines
		i, count := seekLines(lines, pattern, idx, c.eof)
		if i < 0 && count == 0 && pattern[len(pattern)-1] == "" {
			pattern = pattern[:len(pattern)-1]
			if len(with) > 0 && with[len(with)-1] == "" {
				with = with[:len(with)-1]
			}
			i, count = seekLines(lines, pattern, idx, c.eof)
		}
		if count > 1 {
			return "", fmt.Errorf("Found %d occurrences of these lines in %s. The lines must be unique; include more surrounding lines in the hunk:\n%s", count, path, strings.Join(c.oldLines, "\n"))
		}
		if i < 0 {
			return "", fmt.Errorf("Failed to find expected lines in %s:\n%s", path, strings.Join(c.oldLines, "\n"))
		}
		repls = append(repls, repl{at: i, n: len(pattern), with: with})
		idx = i + len(pattern)
	}
	// Chunks are matched in order, from where the previous one ended, so
	// replacements are disjoint; apply them from the end.
	sort.SliceStable(repls, func(a, b int) bool { return repls[a].at < repls[b].at })
	for k := len(repls) - 1; k >= 0; k-- {
		r := repls[k]
		lines = append(lines[:r.at], append(append([]string(nil), r.with...), lines[r.at+r.n:]...)...)
	}
	out := strings.Join(lines, "\n")
	if len(lines) > 0 && (finalNL || text == "") {
		out += "\n"
	}
	if crlf {
		out = strings.ReplaceAll(out, "\n", "\r\n")
	}
	return bom + out, nil
}
