// Package tools owns the agent tool contract: the Tool interface, the caller
// context a tool runs in, and the reference's result envelope (structured
// details plus a pretty-printed JSON text block). Tool implementations live in
// sub-packages; the agent runner, the gateway and the MCP server call them
// through this one interface. Stdlib only.
package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"sort"
	"strings"
)

// Tool is one callable tool. Implementations are safe for concurrent use.
type Tool interface {
	// Name is the tool's wire name, e.g. "sessions_list".
	Name() string
	// Description is shown to the model.
	Description() string
	// Schema is the JSON schema of the parameters object.
	Schema() json.RawMessage
	// Call runs the tool. The caller is in ctx (see CallerFrom). A returned
	// error is wrapped by the runtime into {status:"error", tool, error}.
	Call(ctx context.Context, args json.RawMessage) (*Result, error)
}

// Result is what a tool returns: Details is the structured payload; Text is
// the text shown to the model (by default Details pretty-printed as JSON).
type Result struct {
	Details any
	Text    string
	IsError bool
	// Blocks, when set, is the result's content as the transcript keeps
	// it (text and image blocks, e.g. from an MCP server); Text is still
	// what the model is given.
	Blocks []Block
}

// Block is one content block of a Result: Type "text" with Text, or
// "image" with base64 Data and MimeType.
type Block struct {
	Type     string
	Text     string
	Data     string
	MimeType string
}

// JSONResult returns the reference's "JSON result" for payload: details is
// the payload and the text is the payload as JSON with two-space indents.
func JSONResult(payload any) *Result {
	// As JSON.stringify(payload, null, 2): <, > and & stay as they are
	// (the model reads them; \u003c would only confuse it).
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	text := ""
	if err := enc.Encode(payload); err != nil {
		text = fmt.Sprintf("%q", err.Error())
	} else {
		text = strings.TrimSuffix(buf.String(), "\n")
	}
	return &Result{Details: payload, Text: text}
}

// ErrorResult is the reference's conversion of a thrown tool error:
// {status:"error", tool, error}.
func ErrorResult(tool string, err error) *Result {
	r := JSONResult(ToolError{Status: "error", Tool: tool, Error: err.Error()})
	r.IsError = true
	return r
}

// ToolError is the payload of a tool that failed, in the reference's field
// order.
type ToolError struct {
	Status string `json:"status"`
	Tool   string `json:"tool"`
	Error  string `json:"error"`
}

// Caller describes who is calling a tool.
type Caller struct {
	// SessionKey is the canonical key of the calling session ("" when the
	// call does not come from a session, e.g. the CLI).
	SessionKey string
	AgentID    string
	RunID      string
	// ToolCallID is the model's id of the tool call being run ("" outside
	// a run).
	ToolCallID string
	// Channel is the caller's message channel ("webchat" for internal runs).
	Channel   string
	AccountID string
	To        string
	ThreadID  string
	// Sandboxed is set when the calling session runs sandboxed.
	Sandboxed bool
	// Workspace is the caller's workspace directory.
	Workspace string
	// Chain is the chain of causes of the calling run.
	Chain Chain
	// Operator is set when the call comes from the gateway's operator (an
	// MCP host holding the gateway's token, with mcp.serve.reach
	// "operator"): the session tools reach every session of every agent,
	// whatever tools.sessions.visibility and tools.agentToAgent say.
	Operator bool
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller stored in ctx, or the zero Caller.
func CallerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

type writtenKey struct{}

// WithWritten returns ctx carrying wait, which returns once the results
// of the calling run's earlier tool calls are stored (the runner writes a
// call's result while the next call of the same model step runs).
func WithWritten(ctx context.Context, wait func(context.Context) error) context.Context {
	return context.WithValue(ctx, writtenKey{}, wait)
}

// AwaitWritten waits until the results of the calling run's earlier tool
// calls are stored, so that a tool reading its own session's transcript
// finds them; at once when ctx carries no such wait (WithWritten).
func AwaitWritten(ctx context.Context) error {
	if wait, ok := ctx.Value(writtenKey{}).(func(context.Context) error); ok {
		return wait(ctx)
	}
	return nil
}

// Set is an ordered, name-indexed set of tools.
type Set struct {
	byName map[string]Tool
	names  []string
	// over, when set, stands in for byName's tool of the same name
	// (overName): With's replacement, made without copying byName, which
	// the set shares with the one it came from.
	over     Tool
	overName string
}

// NewSet returns a set holding ts. A later tool with the same name replaces
// an earlier one.
func NewSet(ts ...Tool) *Set {
	s := &Set{byName: make(map[string]Tool, len(ts))}
	for _, t := range ts {
		if _, ok := s.byName[t.Name()]; !ok {
			s.names = append(s.names, t.Name())
		}
		s.byName[t.Name()] = t
	}
	sort.Strings(s.names)
	return s
}

// With returns a copy of s holding t, in place of the tool of the same
// name if s has one. s is left as it was (sets never change once made).
func (s *Set) With(t Tool) *Set {
	if s == nil {
		return NewSet(t)
	}
	name := t.Name()
	if _, ok := s.byName[name]; !ok {
		return NewSet(append(s.All(), t)...)
	}
	if s.over == nil || s.overName == name {
		// A run's replacement (its exec behind its own checks) shares the
		// map: one small allocation instead of a copy of every tool.
		return &Set{byName: s.byName, names: s.names, over: t, overName: name}
	}
	out := &Set{byName: make(map[string]Tool, len(s.byName)), names: s.names}
	for n, x := range s.byName {
		out.byName[n] = x
	}
	out.byName[s.overName] = s.over
	out.byName[name] = t
	return out
}

// Get returns the named tool.
func (s *Set) Get(name string) (Tool, bool) {
	if s == nil {
		return nil, false
	}
	if s.over != nil && name == s.overName {
		return s.over, true
	}
	t, ok := s.byName[name]
	return t, ok
}

// Each yields the tools in All's order without making All's slice.
func (s *Set) Each() iter.Seq[Tool] {
	return func(yield func(Tool) bool) {
		if s == nil {
			return
		}
		for _, n := range s.names {
			t := s.byName[n]
			if s.over != nil && n == s.overName {
				t = s.over
			}
			if !yield(t) {
				return
			}
		}
	}
}

// All returns the tools sorted by name.
func (s *Set) All() []Tool {
	if s == nil {
		return nil
	}
	out := make([]Tool, len(s.names))
	for i, n := range s.names {
		out[i] = s.byName[n]
		if s.over != nil && n == s.overName {
			out[i] = s.over
		}
	}
	return out
}

// Filter returns the subset of s for which keep returns true.
func (s *Set) Filter(keep func(Tool) bool) *Set {
	var ts []Tool
	for _, t := range s.All() {
		if keep(t) {
			ts = append(ts, t)
		}
	}
	return NewSet(ts...)
}

// Len returns the number of tools.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.names)
}

// NotFoundError is the result text of a call to a tool the run does not
// have: "Tool <name> not found", the reference's words, which models know.
func NotFoundError(name string) error { return notFound(name) }

// notFound is NotFoundError's error type: its text keeps the reference's
// capital.
type notFound string

func (n notFound) Error() string { return "Tool " + string(n) + " not found" }
