package channel

import (
	"github.com/switchboardhq/switchboard/internal/lazy"
	"regexp"
	"strings"
)

var (
	mdLink     = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`!?\[([^\]\n]*)\]\(([^)\s]+)\)`) }}
	mdStrong   = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`(\*\*|__)([^*_\n]+?)(\*\*|__)`) }}
	mdEmph     = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`(^|[^\w*])\*([^*\s](?:[^*\n]*[^*\s])?)\*`) }}
	mdStrike   = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`~~([^~\n]+?)~~`) }}
	mdCode     = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile("`([^`\n]+)`") }}
	mdHeading  = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`^#{1,6}\s+`) }}
	mdQuoteRaw = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`^>\s?`) }}
)

// PlainText renders Markdown as plain text for a channel without
// formatting (IRC): code fences go and their contents stay verbatim;
// outside them inline code, emphasis, strike-through and headings lose
// their markers, quotes their '>', and links become "text (url)" (or the
// bare url when the text is the url).
func PlainText(md string) string {
	var b strings.Builder
	inFence := false
	for line := range strings.Lines(md) {
		body := strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(strings.TrimSpace(body), "```") {
			inFence = !inFence
			continue
		}
		if !inFence {
			body = plainLine(body)
		}
		b.WriteString(body)
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

func plainLine(s string) string {
	s = mdHeading.Get().ReplaceAllString(s, "")
	s = mdQuoteRaw.Get().ReplaceAllString(s, "")
	// Inline code first, so that what it holds keeps its markers.
	var codes []string
	s = mdCode.Get().ReplaceAllStringFunc(s, func(m string) string {
		codes = append(codes, m[1:len(m)-1])
		return "\x00" + string(rune('0'+len(codes)-1)) + "\x00"
	})
	s = mdLink.Get().ReplaceAllStringFunc(s, func(m string) string {
		sub := mdLink.Get().FindStringSubmatch(m)
		if sub[1] == "" || sub[1] == sub[2] {
			return sub[2]
		}
		return sub[1] + " (" + sub[2] + ")"
	})
	s = mdStrong.Get().ReplaceAllString(s, "$2")
	s = mdEmph.Get().ReplaceAllString(s, "$1$2")
	s = mdStrike.Get().ReplaceAllString(s, "$1")
	for i, c := range codes {
		s = strings.Replace(s, "\x00"+string(rune('0'+i))+"\x00", c, 1)
	}
	return s
}
