package irc

import (
	"errors"
	"strings"
)

// maxLine is IRC's line limit, CRLF included (RFC 1459, section 2.3).
const maxLine = 512

// Message is one parsed IRC line.
type Message struct {
	// Prefix is the source without the leading ':' (nick!user@host or a
	// server name); empty when absent.
	Prefix  string
	Command string // upper-cased
	Params  []string
}

// Nick returns the nick part of the prefix.
func (m Message) Nick() string {
	n, _, _ := strings.Cut(m.Prefix, "!")
	n, _, _ = strings.Cut(n, "@")
	return n
}

// Param returns parameter i, or "".
func (m Message) Param(i int) string {
	if i < len(m.Params) {
		return m.Params[i]
	}
	return ""
}

var errEmptyLine = errors.New("irc: empty line")

// Parse parses one line (without CRLF): optional IRCv3 @tags (skipped),
// optional :prefix, command, up to 15 middle parameters and an optional
// trailing one.
func Parse(line string) (Message, error) {
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "@") {
		_, rest, ok := strings.Cut(line, " ")
		if !ok {
			return Message{}, errors.New("irc: tags without a command")
		}
		line = rest
	}
	line = strings.TrimLeft(line, " ")
	var m Message
	if strings.HasPrefix(line, ":") {
		p, rest, ok := strings.Cut(line[1:], " ")
		if !ok {
			return Message{}, errors.New("irc: prefix without a command")
		}
		m.Prefix, line = p, strings.TrimLeft(rest, " ")
	}
	cmd, rest, _ := strings.Cut(line, " ")
	if cmd == "" {
		return Message{}, errEmptyLine
	}
	m.Command = strings.ToUpper(cmd)
	for rest != "" {
		rest = strings.TrimLeft(rest, " ")
		if rest == "" {
			break
		}
		if rest[0] == ':' || len(m.Params) == 14 {
			m.Params = append(m.Params, strings.TrimPrefix(rest, ":"))
			break
		}
		var p string
		p, rest, _ = strings.Cut(rest, " ")
		m.Params = append(m.Params, p)
	}
	return m, nil
}

// Format renders command and params as one line without CRLF; the last
// parameter is sent as trailing. It fails when a parameter holds CR, LF
// or NUL, when a non-final parameter is empty, starts with ':' or holds a
// space, or when the line is longer than IRC allows.
func Format(command string, params ...string) (string, error) {
	var b strings.Builder
	b.WriteString(command)
	for i, p := range params {
		if strings.ContainsAny(p, "\r\n\x00") {
			return "", errors.New("irc: parameter holds a line break or NUL")
		}
		b.WriteByte(' ')
		if i == len(params)-1 {
			b.WriteByte(':')
		} else if p == "" || p[0] == ':' || strings.Contains(p, " ") {
			return "", errors.New("irc: bad middle parameter " + p)
		}
		b.WriteString(p)
	}
	if b.Len()+2 > maxLine {
		return "", errors.New("irc: line longer than 512 bytes")
	}
	return b.String(), nil
}
