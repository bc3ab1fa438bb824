package scripted

import (
	"encoding/json"
	"strconv"
	"strings"
)

// ToolDirective returns a "/tool <name> <json>" line that makes the model
// call tool name (which must not contain spaces) with args, encoded with
// encoding/json. A nil args gives a call with {}. It panics if args does not encode to a JSON object, like
// regexp.MustCompile, since it is meant for literals in tests.
func ToolDirective(name string, args any) string {
	if args == nil {
		return "/tool " + name
	}
	b, err := json.Marshal(args)
	if err != nil {
		panic("scripted.ToolDirective: " + err.Error())
	}
	if len(b) == 0 || b[0] != '{' {
		panic("scripted.ToolDirective: arguments do not encode to a JSON object: " + string(b))
	}
	return "/tool " + name + " " + string(b)
}

// ReplyDirective returns the /reply lines that make the model reply exactly
// text, which may span several lines (carriage returns are not kept).
func ReplyDirective(text string) string { return textLines("/reply", text) }

// ThenDirective returns the /then lines that make the model reply exactly
// text once tool results have come back.
func ThenDirective(text string) string { return textLines("/then", text) }

// ThinkDirective returns the /think lines that make the model stream text as
// thinking.
func ThinkDirective(text string) string { return textLines("/think", text) }

// WhenRule returns System prompt rules that apply directive (one or more
// directive lines) to every trigger message that contains match.
func WhenRule(match, directive string) string {
	q := strconv.Quote(match)
	var b strings.Builder
	for i, line := range strings.Split(directive, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("/when ")
		b.WriteString(q)
		b.WriteByte(' ')
		b.WriteString(line)
	}
	return b.String()
}

// textLines returns one "<name> <line>" directive per line of text.
func textLines(name, text string) string {
	var b strings.Builder
	for i, line := range strings.Split(text, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(name)
		if line != "" {
			b.WriteByte(' ')
			b.WriteString(line)
		}
	}
	return b.String()
}
