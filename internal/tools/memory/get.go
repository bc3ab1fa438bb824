package memory

import (
	"context"
	"encoding/json"

	"github.com/switchboardhq/switchboard/internal/memory"
	"github.com/switchboardhq/switchboard/internal/tools"
)

type getTool struct{}

func (getTool) Name() string  { return GetToolName }
func (getTool) Label() string { return "Memory Get" }
func (getTool) Description() string {
	return "Safe exact excerpt read from " + filesDescription + ". Defaults to a bounded excerpt when lines are " +
		"omitted and includes truncation/continuation info when more content exists. status=ok means the requested " +
		"excerpt was read; status=not_found means the file does not exist; status=error means the requested read " +
		"failed, not that memory is disabled."
}
func (getTool) Schema() json.RawMessage { return getSchema }

// wikiMiss is memory_get's payload for corpus=wiki: no wiki is registered.
type wikiMiss struct {
	Path     string   `json:"path"`
	Text     string   `json:"text"`
	Status   string   `json:"status"`
	Warnings []string `json:"warnings"`
}

func (getTool) Call(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
	p, err := tools.ParseParams(args)
	if err != nil {
		return nil, err
	}
	path, err := p.RequiredString("path")
	if err != nil {
		return nil, &tools.InputError{Msg: err.Error()}
	}
	corp, err := corpus(p, "memory", "wiki", "all")
	if err != nil {
		return nil, err
	}
	if corp == "wiki" {
		return tools.JSONResult(wikiMiss{Path: path, Status: "not_found", Warnings: []string{wikiWarning}}), nil
	}
	_, workspace, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	from, _ := p.Int("from", 1)
	lines, _ := p.Int("lines", 1)
	res, err := memory.Read(workspace, path, from, lines)
	if err != nil {
		return nil, &tools.InputError{Msg: err.Error()}
	}
	return tools.JSONResult(res), nil
}
