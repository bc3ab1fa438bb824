package config

import (
	"strconv"
	"strings"
)

// Problem is one thing wrong with a configuration. File and Line locate it
// in the source (Line is 0 when unknown, e.g. for a value that came from the
// environment); Path is the dotted key path, such as
// "agents.list[1].id".
type Problem struct {
	File    string
	Line    int
	Path    string
	Message string
}

// String formats p as "file:line: path: message", leaving out the parts that
// are unknown.
func (p Problem) String() string { return formatLocated(p.File, p.Line, p.Path, p.Message) }

// Warning is something in a configuration that was ignored or reinterpreted
// but does not stop the gateway, such as an unknown key. Fields are as in
// Problem.
type Warning struct {
	File    string
	Line    int
	Path    string
	Message string
}

// String formats w as "file:line: path: message", leaving out the parts that
// are unknown.
func (w Warning) String() string { return formatLocated(w.File, w.Line, w.Path, w.Message) }

// ValidationError reports every problem found in a configuration. Parse,
// Load and Validate return it (as *ValidationError) whenever the file was
// readable but wrong; callers can list the problems with errors.AsType.
type ValidationError struct {
	Problems []Problem
}

// Error lists every problem, one per line, as "file:line: path: message".
func (e *ValidationError) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.String())
	}
	if len(e.Problems) == 0 {
		return "config: invalid configuration"
	}
	return b.String()
}

func formatLocated(file string, line int, path, msg string) string {
	var b strings.Builder
	if file != "" {
		b.WriteString(file)
		if line > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(line))
		}
		b.WriteString(": ")
	} else if line > 0 {
		b.WriteString("line ")
		b.WriteString(strconv.Itoa(line))
		b.WriteString(": ")
	}
	if path != "" {
		b.WriteString(path)
		b.WriteString(": ")
	}
	b.WriteString(msg)
	return b.String()
}
