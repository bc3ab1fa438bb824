package memory

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Chunk sizes, the reference's defaults: 400 tokens with 80 tokens of
// overlap, at 4 characters a token.
const (
	ChunkChars   = 400 * 4
	OverlapChars = 80 * 4
)

// Chunk is one piece of a memory file: its 1-based line range and text.
type Chunk struct {
	StartLine, EndLine int
	Text               string
}

// chunkLine is one line (or a piece of an over-long line) being chunked.
type chunkLine struct {
	no   int
	text string
}

// ChunkMarkdown splits content into chunks of whole lines of at most about
// ChunkChars characters, each starting with the last OverlapChars characters'
// worth of lines of the one before; a line longer than ChunkChars is cut
// into pieces. Blank-only content gives no chunks. Invalid UTF-8 is kept
// byte for byte; characters are counted as runes.
func ChunkMarkdown(content string) []Chunk {
	if strings.TrimSpace(content) == "" {
		return nil
	}
	var lines []chunkLine
	for i, l := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
		l = strings.TrimSuffix(l, "\r")
		for utf8.RuneCountInString(l) > ChunkChars {
			cut := byteIndexOfRune(l, ChunkChars)
			lines = append(lines, chunkLine{no: i + 1, text: l[:cut]})
			l = l[cut:]
		}
		lines = append(lines, chunkLine{no: i + 1, text: l})
	}
	var out []Chunk
	var cur []chunkLine
	size := 0
	flush := func() {
		if len(cur) == 0 {
			return
		}
		texts := make([]string, len(cur))
		blank := true
		for i, l := range cur {
			texts[i] = l.text
			if blank && strings.TrimSpace(l.text) != "" {
				blank = false
			}
		}
		if !blank {
			out = append(out, Chunk{StartLine: cur[0].no, EndLine: cur[len(cur)-1].no, Text: strings.Join(texts, "\n")})
		}
	}
	for _, l := range lines {
		n := utf8.RuneCountInString(l.text) + 1
		if size+n > ChunkChars && len(cur) > 0 {
			flush()
			// Carry the tail of the chunk over as the next one's start.
			keep, kept := 0, 0
			for i := len(cur) - 1; i >= 0; i-- {
				m := utf8.RuneCountInString(cur[i].text) + 1
				if kept+m > OverlapChars || kept+m+n > ChunkChars {
					break
				}
				kept += m
				keep++
			}
			cur = append([]chunkLine(nil), cur[len(cur)-keep:]...)
			size = kept
		}
		cur = append(cur, l)
		size += n
	}
	flush()
	return out
}

// byteIndexOfRune is the byte offset of the n-th rune of s.
func byteIndexOfRune(s string, n int) int {
	i := 0
	for off := range s {
		if i == n {
			return off
		}
		i++
	}
	return len(s)
}

// isCJK reports whether r is a Chinese, Japanese or Korean character, which
// the index treats as a word of its own.
func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) ||
		r == 'ー' // the katakana prolonged sound mark is in Common
}

// SearchText is text as the keyword index tokenizes it: words of letters,
// digits, combining marks and '_' separated by single spaces, every CJK
// character a word of its own. Both backends then split it the same way
// (PostgreSQL's parser would otherwise read "ORCA-7731" as "orca" and the
// signed number "-7731").
func SearchText(text string) string {
	var b strings.Builder
	b.Grow(len(text) + len(text)/2)
	space := true // a space was just written (or nothing yet)
	for _, r := range text {
		switch {
		case isCJK(r):
			if !space {
				b.WriteByte(' ')
			}
			b.WriteRune(r)
			b.WriteByte(' ')
			space = true
		case isWordRune(r):
			b.WriteRune(r)
			space = false
		case !space:
			b.WriteByte(' ')
			space = true
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// isWordRune reports whether r belongs to a word.
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || r == '_' || unicode.Is(unicode.Mn, r)
}

// MaxQueryTerms caps the terms of one search.
const MaxQueryTerms = 32

// QueryTerms turns a search query into the store's terms: every run of
// letters, digits and '_' is a term, lower-cased; a run holding CJK
// characters becomes a phrase of its pieces (each CJK character a word).
// Duplicate terms are dropped, and at most MaxQueryTerms are kept.
func QueryTerms(query string) [][]string {
	var out [][]string
	seen := map[string]bool{}
	for _, tok := range strings.FieldsFunc(query, func(r rune) bool { return !isWordRune(r) }) {
		words := strings.Fields(strings.ToLower(SearchText(tok)))
		if len(words) == 0 {
			continue
		}
		key := strings.Join(words, " ")
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, words)
		if len(out) == MaxQueryTerms {
			break
		}
	}
	return out
}
