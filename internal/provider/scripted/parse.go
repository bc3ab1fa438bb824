package scripted

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// kind is a directive name.
type kind uint8

const (
	plainLine kind = iota // not a directive
	kindReply
	kindThink
	kindTool
	kindStep
	kindThen
	kindSleep
	kindUsage
	kindError
	kindStall
)

// names are the directive names, indexed by kind.
var names = [...]string{
	kindReply: "reply",
	kindThink: "think",
	kindTool:  "tool",
	kindStep:  "step",
	kindThen:  "then",
	kindSleep: "sleep",
	kindUsage: "usage",
	kindError: "error",
	kindStall: "stall",
}

func lookup(name string) kind {
	for k, n := range names {
		if k != int(plainLine) && n == name {
			return kind(k)
		}
	}
	return plainLine
}

// classify returns the directive kind and argument of one line (without its
// "\n"), or plainLine.
func classify(line string) (kind, string) {
	s := strings.TrimLeft(line, " \t")
	if len(s) < 2 || s[0] != '/' {
		return plainLine, ""
	}
	s = strings.TrimSuffix(s[1:], "\r")
	name, arg := s, ""
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		name, arg = s[:i], s[i+1:]
	}
	return lookup(name), arg
}

// directive is one directive line and where it came from, for errors.
type directive struct {
	kind   kind
	arg    string
	line   int  // 1-based line number
	system bool // from a /when rule of the System prompt
}

// script is what the trigger asks of the current step.
type script struct {
	plain    string // the echo text
	reply    string
	hasReply bool
	think    string
	then     string
	hasThen  bool
	calls    []provider.ToolCall // IDs are set by plan
	sleep    time.Duration
	usage    *provider.Usage
	err      *provider.Error
	stall    bool
}

// lines calls fn for each line of s (without "\n") with its 1-based number,
// until fn returns false.
func lines(s string, fn func(n int, line string) bool) {
	for n := 1; s != ""; n++ {
		line, rest, _ := strings.Cut(s, "\n")
		if !fn(n, line) {
			return
		}
		s = rest
	}
}

// hasDirective reports whether text has a directive line.
func hasDirective(text string) bool {
	if strings.IndexByte(text, '/') < 0 {
		return false
	}
	found := false
	lines(text, func(_ int, line string) bool {
		k, _ := classify(line)
		found = k != plainLine
		return !found
	})
	return found
}

// parse reads the directives of the trigger text (or, if it has none, of the
// matching /when rules of system) and returns the script of step.
func (p *Provider) parse(text, system string, step int) (script, error) {
	var sc script
	var dirs []directive
	if hasDirective(text) {
		var plain []string
		lines(text, func(n int, line string) bool {
			if k, arg := classify(line); k != plainLine {
				dirs = append(dirs, directive{kind: k, arg: arg, line: n})
			} else {
				plain = append(plain, line)
			}
			return true
		})
		sc.plain = strings.TrimSpace(strings.Join(plain, "\n"))
	} else {
		sc.plain = strings.TrimSpace(text)
		var err error
		if dirs, err = p.rules(text, system); err != nil {
			return script{}, err
		}
	}

	var reply, think, then []string
	cur := 1
	for _, d := range dirs {
		switch d.kind {
		case kindStep:
			cur++
			continue
		case kindThen:
			then = append(then, d.arg)
			continue
		}
		if err := p.apply(&sc, d, cur == step, &reply, &think); err != nil {
			return script{}, err
		}
	}
	sc.hasReply, sc.reply = len(reply) > 0, join(reply)
	sc.hasThen, sc.then = len(then) > 0, join(then)
	sc.think = join(think)
	return sc, nil
}

// join joins lines with "\n", without allocating for a single line.
func join(lines []string) string {
	if len(lines) == 1 {
		return lines[0]
	}
	return strings.Join(lines, "\n")
}

// apply checks d and, if use is set (d belongs to the current step), adds it
// to sc.
func (p *Provider) apply(sc *script, d directive, use bool, reply, think *[]string) error {
	switch d.kind {
	case kindReply:
		if use {
			*reply = append(*reply, d.arg)
		}
	case kindThink:
		if use {
			*think = append(*think, d.arg)
		}
	case kindStall:
		sc.stall = sc.stall || use
	case kindTool:
		name, args := strings.TrimSpace(d.arg), ""
		if i := strings.IndexAny(name, " \t"); i >= 0 {
			name, args = name[:i], name[i:]
		}
		if name == "" {
			return p.lineError(d, "missing tool name")
		}
		raw, err := toolArgs(args)
		if err != nil {
			return p.lineError(d, err.Error())
		}
		if use {
			sc.calls = append(sc.calls, provider.ToolCall{Name: name, Arguments: raw})
		}
	case kindSleep:
		dur, err := time.ParseDuration(strings.TrimSpace(d.arg))
		if err != nil || dur < 0 {
			return p.lineError(d, "want a non-negative duration such as 500ms or 2s")
		}
		if use {
			sc.sleep = min(sc.sleep+min(dur, MaxSleep), MaxSleep)
		}
	case kindUsage:
		f := strings.Fields(d.arg)
		if len(f) < 2 || len(f) > 4 {
			return p.lineError(d, "want <in> <out> [<cache read> [<cache write>]]")
		}
		var v [4]int64
		for i, s := range f {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				return p.lineError(d, "token counts must be non-negative integers")
			}
			v[i] = n
		}
		if use {
			sc.usage = &provider.Usage{Input: v[0], Output: v[1], CacheRead: v[2], CacheWrite: v[3]}
		}
	case kindError:
		e, err := p.injected(d.arg)
		if err != nil {
			return p.lineError(d, err.Error())
		}
		if use {
			sc.err = e
		}
	}
	return nil
}

// toolArgs validates and compacts /tool arguments; empty means {}.
func toolArgs(s string) (json.RawMessage, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}"), nil
	}
	if s[0] != '{' || !json.Valid([]byte(s)) {
		return nil, errNotObject
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		return nil, errNotObject
	}
	return json.RawMessage(buf.Bytes()), nil
}

type parseError string

func (e parseError) Error() string { return string(e) }

const errNotObject = parseError("arguments are not a JSON object")

// injected returns the error an "/error [<status>] [<message>]" line asks for.
func (p *Provider) injected(arg string) (*provider.Error, error) {
	arg = strings.TrimSpace(arg)
	status := 500
	first, rest, _ := strings.Cut(arg, " ")
	if first != "" && strings.Trim(first, "0123456789") == "" {
		n, err := strconv.Atoi(first)
		if err != nil || n < 100 || n > 599 {
			return nil, parseError("status must be between 100 and 599")
		}
		status, arg = n, strings.TrimSpace(rest)
	}
	if arg == "" {
		arg = "injected error"
	}
	e := p.errorf(status, arg)
	switch status {
	case 429, 502, 503, 504:
		e.Retryable = true
	}
	return e, nil
}

// rules returns the directive lines of the /when rules in system that match
// text.
func (p *Provider) rules(text, system string) ([]directive, error) {
	if !strings.Contains(system, "/when") {
		return nil, nil
	}
	var dirs []directive
	var err error
	lines(system, func(n int, line string) bool {
		s := strings.TrimLeft(line, " \t")
		rest, ok := strings.CutPrefix(s, "/when")
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
			return true
		}
		rest = strings.TrimLeft(rest, " \t")
		q, qerr := strconv.QuotedPrefix(rest)
		if qerr != nil {
			err = p.errorf(400, "system line "+strconv.Itoa(n)+": /when: want a quoted string")
			return false
		}
		sub, _ := strconv.Unquote(q)
		k, arg := classify(rest[len(q):])
		if k == plainLine {
			err = p.errorf(400, "system line "+strconv.Itoa(n)+": /when: want a directive after the string")
			return false
		}
		if strings.Contains(text, sub) {
			dirs = append(dirs, directive{kind: k, arg: arg, line: n, system: true})
		}
		return true
	})
	return dirs, err
}

// lineError returns the 400 error for a malformed directive.
func (p *Provider) lineError(d directive, msg string) *provider.Error {
	where := "line "
	if d.system {
		where = "system line "
	}
	return p.errorf(400, where+strconv.Itoa(d.line)+": /"+names[d.kind]+": "+msg)
}
