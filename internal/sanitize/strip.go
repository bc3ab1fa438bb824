package sanitize

import (
	"sort"
	"strings"
)

// The strippers of reply text extraction (docs/spec/reference-behaviour.md §6.6), in the
// order sanitizeTextContent applies them: MiniMax tool-call XML, downgraded
// tool-call text, reasoning tags.

var (
	minimaxMarker = &lazyRE{src: func() string { return ci("minimax:tool_call") }}
	// <invoke\b[^>]*>[\s\S]*?</invoke>
	minimaxInvoke = &lazyRE{src: func() string { return `<` + ci("invoke") + `\b[^>]*>(?s:.)*?</` + ci("invoke") + `>` }}
	// </?minimax:tool_call>
	minimaxTag = &lazyRE{src: func() string { return `</?` + ci("minimax:tool_call") + `>` }}
)

// stripMinimaxToolCallXML removes MiniMax tool invocations leaked into text:
// <invoke …>…</invoke> blocks and <minimax:tool_call> tags, only when the
// text mentions minimax:tool_call at all. It does not trim.
func stripMinimaxToolCallXML(text string) string {
	if text == "" || !minimaxMarker.get().MatchString(text) {
		return text
	}
	text = minimaxInvoke.get().ReplaceAllLiteralString(text, "")
	return minimaxTag.get().ReplaceAllLiteralString(text, "")
}

var (
	// \[Tool (?:Call|Result)/i and \[Historical context/i
	downgradedMarker = &lazyRE{src: func() string {
		return `\[` + ci("Tool ") + `(?:` + ci("Call") + `|` + ci("Result") + `)|\[` + ci("Historical context")
	}}
	// \[Tool Call:[^\]]*\]
	toolCallMarker = &lazyRE{src: func() string { return `\[` + ci("Tool Call:") + `[^\]]*\]` }}
	// \[Historical context:[^\]]*\]\n?
	historicalContext = &lazyRE{src: func() string { return `\[` + ci("Historical context:") + `[^\]]*\]\n?` }}
)

// stripDowngradedToolCallText removes the text forms of tool calls that
// replays to some providers leave in assistant text: "[Tool Call: name (ID:
// …)]" markers with an optional following "Arguments: <json>", "[Tool
// Result for ID …]" blocks up to the next "[Tool " or the end, and
// "[Historical context: …]" markers. When there is anything to strip the
// result is trimmed; otherwise text is returned as it is.
func stripDowngradedToolCallText(text string) string {
	if text == "" || !downgradedMarker.get().MatchString(text) {
		return text
	}
	cleaned := stripToolCalls(text)
	cleaned = stripToolResults(cleaned)
	cleaned = historicalContext.get().ReplaceAllLiteralString(cleaned, "")
	return jsTrim(cleaned)
}

// stripToolCalls removes each "[Tool Call: …]" marker, the blanks and one
// line break after it, and an "Arguments:" value after that (a JSON object,
// array or string, or the rest of the line); the line break that follows is
// removed too when the output so far is empty or ends a line.
func stripToolCalls(input string) string {
	var b strings.Builder
	var values *jsonishIndex // built on first use
	cursor := 0
	at := func(i int) byte {
		if i < len(input) {
			return input[i]
		}
		return 0
	}
	for _, m := range toolCallMarker.get().FindAllStringIndex(input, -1) {
		start := m[0]
		if start < cursor {
			continue
		}
		b.WriteString(input[cursor:start])
		i := m[1]
		for at(i) == ' ' || at(i) == '\t' {
			i++
		}
		if at(i) == '\r' {
			i++
			if at(i) == '\n' {
				i++
			}
		} else if at(i) == '\n' {
			i++
		}
		for at(i) == ' ' || at(i) == '\t' {
			i++
		}
		if hasPrefixFold(input[i:], "arguments") {
			i += len("arguments")
			if at(i) == ':' {
				i++
			}
			if at(i) == ' ' {
				i++
			}
			if values == nil {
				values = newJSONishIndex(input)
			}
			if end, ok := values.consume(i); ok {
				i = end
			}
		}
		if c := at(i); c == '\n' || c == '\r' {
			out := b.String()
			if out == "" || strings.HasSuffix(out, "\n") || strings.HasSuffix(out, "\r") {
				if at(i) == '\r' {
					i++
				}
				if at(i) == '\n' {
					i++
				}
			}
		}
		cursor = i
	}
	b.WriteString(input[cursor:])
	return b.String()
}

// jsonishIndex answers the reference's consumeJsonish for any start in
// constant time. The reference scans from each "Arguments:" to the end of
// the value, which is quadratic when many markers are followed by values
// that never close; the same answers come from two tables computed once,
// right to left.
type jsonishIndex struct {
	input string
	// closeAt[x] is the index just past the first bracket that closes the
	// enclosing level when scanning from x outside any string, or -1.
	closeAt []int
	// quoteAt[x] is the index of the first unescaped quote when scanning
	// from x inside a string, or -1.
	quoteAt []int
}

func newJSONishIndex(input string) *jsonishIndex {
	n := len(input)
	ix := &jsonishIndex{input: input, closeAt: make([]int, n+2), quoteAt: make([]int, n+2)}
	ix.closeAt[n], ix.closeAt[n+1] = -1, -1
	ix.quoteAt[n], ix.quoteAt[n+1] = -1, -1
	for x := n - 1; x >= 0; x-- {
		switch input[x] {
		case '"':
			ix.quoteAt[x] = x
		case '\\':
			ix.quoteAt[x] = ix.quoteAt[x+2]
		default:
			ix.quoteAt[x] = ix.quoteAt[x+1]
		}
		switch input[x] {
		case '"':
			if q := ix.quoteAt[x+1]; q < 0 {
				ix.closeAt[x] = -1
			} else {
				ix.closeAt[x] = ix.closeAt[q+1]
			}
		case '{', '[':
			if y := ix.closeAt[x+1]; y < 0 {
				ix.closeAt[x] = -1
			} else {
				ix.closeAt[x] = ix.closeAt[y]
			}
		case '}', ']':
			ix.closeAt[x] = x + 1
		default:
			ix.closeAt[x] = ix.closeAt[x+1]
		}
	}
	return ix
}

// consume returns the end of the JSON-ish value at or after start (after
// blanks and line breaks): a bracketed value up to its matching close
// (brackets inside strings do not count, and any closing bracket closes any
// opening one), a string up to its closing quote, or else the rest of the
// line. It reports false for an unterminated value or none at all.
func (ix *jsonishIndex) consume(start int) (int, bool) {
	input := ix.input
	i := start
	for i < len(input) {
		c := input[i]
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			break
		}
		i++
	}
	if i >= len(input) {
		return 0, false
	}
	switch input[i] {
	case '{', '[':
		end := ix.closeAt[i+1]
		return end, end >= 0
	case '"':
		q := ix.quoteAt[i+1]
		return q + 1, q >= 0
	}
	end := i
	for end < len(input) && input[end] != '\n' && input[end] != '\r' {
		end++
	}
	return end, true
}

// toolResultMarker is \[Tool Result for ID[^\]]*\]\n?
var toolResultMarker = &lazyRE{src: func() string { return `\[` + ci("Tool Result for ID") + `[^\]]*\]\n?` }}

// stripToolResults removes each "[Tool Result for ID …]" marker with the
// text after it, up to (not including) the line breaks before the next
// "[Tool " or the line breaks that end the text: the reference's
// /\[Tool Result for ID[^\]]*\]\n?[\s\S]*?(?=\n*\[Tool |\n*$)/gi.
func stripToolResults(s string) string {
	var b strings.Builder
	pos := 0
	for pos <= len(s) {
		loc := toolResultMarker.get().FindStringIndex(s[pos:])
		if loc == nil {
			break
		}
		start, body := pos+loc[0], pos+loc[1]
		end := toolResultEnd(s, body)
		b.WriteString(s[pos:start])
		pos = end
	}
	if pos == 0 {
		return s
	}
	b.WriteString(s[pos:])
	return b.String()
}

// toolResultEnd returns the first index p >= from where \n*\[Tool  or \n*$
// matches (ASCII case-insensitively).
func toolResultEnd(s string, from int) int {
	for p := from; p < len(s); {
		q := p
		for q < len(s) && s[q] == '\n' {
			q++
		}
		if q == len(s) || hasPrefixFold(s[q:], "[tool ") {
			return p
		}
		if q > p {
			p = q // every start inside a run of line breaks reaches the same q
		} else {
			p++
		}
	}
	return len(s)
}

// Reasoning tags (the reference's stripReasoningTagsFromText, strict mode,
// trimming both ends).
var (
	// <\s*\/?\s*(?:think(?:ing)?|thought|antthinking|final)\b
	reasoningQuick = &lazyRE{src: func() string {
		return `<` + jsSpace + `*/?` + jsSpace + `*(?:` + ci("think") + `(?:` + ci("ing") + `)?|` + ci("thought") + `|` + ci("antthinking") + `|` + ci("final") + `)\b`
	}}
	// <\s*\/?\s*final\b[^<>]*>
	finalTag = &lazyRE{src: func() string { return `<` + jsSpace + `*/?` + jsSpace + `*` + ci("final") + `\b[^<>]*>` }}
	// <\s*(\/?)\s*(?:think(?:ing)?|thought|antthinking)\b[^<>]*>
	thinkingTag = &lazyRE{src: func() string {
		return `<` + jsSpace + `*(/?)` + jsSpace + `*(?:` + ci("think") + `(?:` + ci("ing") + `)?|` + ci("thought") + `|` + ci("antthinking") + `)\b[^<>]*>`
	}}
	// \/\s*>$
	selfClosingEnd = &lazyRE{src: func() string { return `/` + jsSpace + `*>$` }}
)

// stripReasoningTags removes <think>, <thinking>, <thought> and
// <antthinking> blocks with their content, and <final> tags (keeping their
// content), except inside Markdown code. An unclosed reasoning block runs to
// the end. When any such tag is present the result is trimmed; otherwise
// text is returned as it is.
func stripReasoningTags(text string) string {
	if text == "" || !reasoningQuick.get().MatchString(text) {
		return text
	}
	cleaned := text
	if finals := finalTag.get().FindAllStringIndex(text, -1); finals != nil {
		regions := findCodeRegions(text)
		var b strings.Builder
		last := 0
		for _, m := range finals {
			if !regions.contains(m[0]) {
				b.WriteString(text[last:m[0]])
				last = m[1]
			}
		}
		b.WriteString(text[last:])
		cleaned = b.String()
	}
	regions := findCodeRegions(cleaned)
	var b strings.Builder
	last := 0
	inThinking := false
	for _, m := range thinkingTag.get().FindAllStringSubmatchIndex(cleaned, -1) {
		idx := m[0]
		if regions.contains(idx) {
			continue
		}
		isClose := cleaned[m[2]:m[3]] == "/"
		if !inThinking {
			b.WriteString(cleaned[last:idx])
			selfClosing := !isClose && selfClosingEnd.get().MatchString(cleaned[m[0]:m[1]])
			if !isClose && !selfClosing {
				inThinking = true
			}
		} else if isClose {
			inThinking = false
		}
		last = m[1]
	}
	if !inThinking {
		b.WriteString(cleaned[last:])
	}
	return jsTrim(b.String())
}

// codeRegion is a half-open byte range of Markdown code.
type codeRegion struct{ start, end int }

// codeRegions are the Markdown code of a text: fenced blocks and inline
// spans, each list sorted and free of overlaps (an inline span may overlap
// a fence).
type codeRegions struct{ fenced, inline []codeRegion }

// contains reports whether the byte at pos is inside code.
func (c codeRegions) contains(pos int) bool {
	return regionAt(c.fenced, pos) || regionAt(c.inline, pos)
}

// regionAt reports whether pos is in one of the sorted, disjoint regions.
func regionAt(regions []codeRegion, pos int) bool {
	i := sort.Search(len(regions), func(i int) bool { return regions[i].start > pos })
	return i > 0 && pos < regions[i-1].end
}

// inlineCode is `+[^`]+`+
var inlineCode = &lazyRE{expr: "`+[^`]+`+"}

// findCodeRegions finds fenced and inline Markdown code the way the
// reference does: a fence is ``` or ~~~ at the start of the text or of a
// line, followed by the rest of its line, and runs to the next line break
// followed by the same fence or to the end of the text; inline code is a
// backtick run, non-backtick text and a backtick run, unless it lies wholly
// inside a fence.
func findCodeRegions(text string) codeRegions {
	var c codeRegions
	for pos := 0; pos < len(text); {
		r, ok := nextFence(text, pos)
		if !ok {
			break
		}
		c.fenced = append(c.fenced, r)
		pos = r.end
	}
	f := 0 // fences ending before the current span cannot contain it
	for _, m := range inlineCode.get().FindAllStringIndex(text, -1) {
		for f < len(c.fenced) && c.fenced[f].end < m[1] {
			f++
		}
		if f < len(c.fenced) && c.fenced[f].start <= m[0] {
			continue // wholly inside fence f
		}
		c.inline = append(c.inline, codeRegion{m[0], m[1]})
	}
	return c
}

// nextFence finds the first match of (^|\n)(```|~~~)[^\n]*\n[\s\S]*?(?:\n\2|$)
// at or after pos; the region excludes the leading line break.
func nextFence(text string, pos int) (codeRegion, bool) {
	for i := pos; i < len(text); i++ {
		var fenceAt int
		switch {
		case i == 0 && isFence(text, 0):
			fenceAt = 0
		case text[i] == '\n' && isFence(text, i+1):
			fenceAt = i + 1
		default:
			continue
		}
		fence := text[fenceAt : fenceAt+3]
		nl := strings.IndexByte(text[fenceAt+3:], '\n')
		if nl < 0 {
			return codeRegion{}, false // no later line can open a fence either
		}
		body := fenceAt + 3 + nl + 1
		end := len(text)
		if k := strings.Index(text[body:], "\n"+fence); k >= 0 {
			end = body + k + 1 + len(fence)
		}
		return codeRegion{fenceAt, end}, true
	}
	return codeRegion{}, false
}

func isFence(text string, i int) bool {
	return strings.HasPrefix(text[i:], "```") || strings.HasPrefix(text[i:], "~~~")
}

// sanitizeTextContent is the reference's sanitizeTextContent: the three
// strippers in order.
func sanitizeTextContent(text string) string {
	if text == "" {
		return text
	}
	return stripReasoningTags(stripDowngradedToolCallText(stripMinimaxToolCallXML(text)))
}
