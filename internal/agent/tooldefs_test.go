package agent

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/switchboardhq/switchboard/internal/tools"
)

// defTool is a tool whose definition is its fields.
type defTool struct {
	name, desc string
	schema     json.RawMessage
}

func (t defTool) Name() string            { return t.name }
func (t defTool) Description() string     { return t.desc }
func (t defTool) Schema() json.RawMessage { return t.schema }
func (defTool) Call(context.Context, json.RawMessage) (*tools.Result, error) {
	return tools.JSONResult(nil), nil
}

// TestToolDefsShared: a run whose tools are the previous run's (the same
// names, descriptions and schemas, in a set of its own) gets the
// definitions made for it, with no allocation; another set, or a run with
// client tools to add, gets definitions of its own, made afresh.
func TestToolDefsShared(t *testing.T) {
	schema := json.RawMessage(`{"type":"object"}`)
	read, exec := defTool{"read", "reads", schema}, defTool{"exec", "runs", schema}
	var d toolDefs
	first := d.of(tools.NewSet(read, exec), 0)
	if len(first) != 2 || cap(first) != 2 || first[0].Name != "exec" || first[1].Description != "reads" || string(first[1].Parameters) != string(schema) {
		t.Fatalf("defs = %+v (cap %d)", first, cap(first))
	}
	same := tools.NewSet(read, exec).With(defTool{"exec", "runs", json.RawMessage(`{"type":"object"}`)})
	if got := d.of(same, 0); &got[0] != &first[0] {
		t.Errorf("the same tools' definitions were made again")
	}
	if n := testing.AllocsPerRun(50, func() { _ = d.of(same, 0) }); n != 0 {
		t.Errorf("shared definitions: %v allocations, want 0", n)
	}
	for _, other := range []*tools.Set{
		tools.NewSet(read, defTool{"exec", "runs now", schema}),
		tools.NewSet(read, defTool{"exec", "runs", json.RawMessage(`{"type":"object","x":1}`)}),
		tools.NewSet(read, defTool{"exec", "runs", nil}),
		tools.NewSet(read),
		tools.NewSet(read, exec, defTool{"ls", "lists", schema}),
	} {
		got := d.of(other, 0)
		if &got[0] == &first[0] || len(got) != other.Len() {
			t.Fatalf("defs of another set = %+v", got)
		}
		for i, tool := range other.All() {
			if got[i].Name != tool.Name() || got[i].Description != tool.Description() || string(got[i].Parameters) != string(tool.Schema()) ||
				(got[i].Parameters == nil) != (tool.Schema() == nil) {
				t.Errorf("def %d = %+v, want %s's", i, got[i], tool.Name())
			}
		}
		first = d.of(other, 0)
	}
	withClient := d.of(tools.NewSet(read), 1)
	if len(withClient) != 1 || cap(withClient) != 2 {
		t.Errorf("defs with room for a client tool: len %d cap %d, want 1, 2", len(withClient), cap(withClient))
	}
	if got := d.of(tools.NewSet(read), 0); &got[0] == &withClient[0] {
		t.Errorf("definitions with room for client tools were shared")
	}
	if got := d.of(nil, 0); got != nil {
		t.Errorf("no tools: %v, want nil", got)
	}
	if got := d.of(nil, 2); len(got) != 0 || cap(got) != 2 {
		t.Errorf("client tools only: len %d cap %d, want 0, 2", len(got), cap(got))
	}
}
