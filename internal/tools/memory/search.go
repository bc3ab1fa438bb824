package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/switchboardhq/switchboard/internal/memory"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/tools"
)

type searchTool struct{ idx *memory.Index }

func (searchTool) Name() string  { return SearchToolName }
func (searchTool) Label() string { return "Memory Search" }
func (searchTool) Description() string {
	return "Mandatory recall step: search " + filesDescription + " before answering questions about prior work, " +
		"decisions, dates, people, preferences, or todos. Ranks by meaning when an embedding provider is configured, " +
		"else by keywords: then use distinctive words the note would contain. " +
		"`corpus=memory` restricts hits to indexed memory files. If response has disabled=true, tell the user and include " +
		"the warning/action guidance."
}
func (searchTool) Schema() json.RawMessage { return searchSchema }

// searchHit is a result as the tool presents it: the index's hit plus its
// corpus and, with citations, the citation.
type searchHit struct {
	memory.Hit
	Corpus   string `json:"corpus"`
	Citation string `json:"citation,omitempty"`
}

// searchResult is memory_search's payload.
type searchResult struct {
	Results   []searchHit `json:"results"`
	Provider  string      `json:"provider"`
	Model     string      `json:"model,omitempty"`
	Mode      string      `json:"mode"`
	Citations string      `json:"citations"`
	Note      string      `json:"note,omitempty"`
	Warnings  []string    `json:"warnings,omitempty"`
}

// unavailableResult is the reference's payload for a search that cannot run.
type unavailableResult struct {
	Results     []searchHit `json:"results"`
	Disabled    bool        `json:"disabled"`
	Unavailable bool        `json:"unavailable"`
	Error       string      `json:"error"`
	Warning     string      `json:"warning"`
	Action      string      `json:"action"`
}

func (t searchTool) Call(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
	p, err := tools.ParseParams(args)
	if err != nil {
		return nil, err
	}
	query, err := p.RequiredString("query")
	if err != nil {
		return nil, &tools.InputError{Msg: err.Error()}
	}
	corp, err := corpus(p, "memory", "wiki", "all", "sessions")
	if err != nil {
		return nil, err
	}
	if corp == "sessions" {
		msg := "Session transcript search is not enabled."
		return tools.JSONResult(unavailableResult{Results: []searchHit{}, Disabled: true, Unavailable: true, Error: msg,
			Warning: msg, Action: "Use sessions_search to search session transcripts."}), nil
	}
	agentID, workspace, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	res := searchResult{Results: []searchHit{}, Provider: "none", Mode: "fts-only", Citations: "auto", Note: KeywordOnlyNote}
	if corp == "wiki" || corp == "all" {
		res.Warnings = append(res.Warnings, wikiWarning)
	}
	if corp != "wiki" {
		if t.idx == nil {
			return nil, errors.New("memory search is unavailable: the store keeps no memory index")
		}
		maxResults, _ := p.Int("maxResults", 1)
		minScore, _ := p.Number("minScore")
		found, err := t.idx.Query(ctx, indexScope(agentID, workspace), workspace, query, maxResults, minScore)
		if err != nil {
			return nil, fmt.Errorf("memory search failed: %w", err)
		}
		if found.Mode == "hybrid" {
			res.Mode, res.Note = "hybrid", ""
			res.Provider, res.Model, _ = strings.Cut(found.Model, "/")
		}
		if found.Warning != "" {
			res.Warnings = append(res.Warnings, found.Warning)
		}
		cite := citationsFor(tools.CallerFrom(ctx).SessionKey)
		for _, h := range found.Hits {
			sh := searchHit{Hit: h, Corpus: h.Source}
			if cite {
				sh.Citation = citation(h)
				sh.Snippet = strings.TrimRight(sh.Snippet, " \t\r\n") + "\n\nSource: " + sh.Citation
			}
			res.Results = append(res.Results, sh)
		}
	}
	return tools.JSONResult(res), nil
}

// citationsFor is the reference's "auto" citations mode: citations in
// direct chats, none in group and channel sessions.
func citationsFor(key string) bool {
	switch sessionkey.ChatTypeOf(key) {
	case sessionkey.ChatGroup, sessionkey.ChatChannel:
		return false
	}
	return true
}

// citation is "<path>#L<start>[-L<end>]".
func citation(h memory.Hit) string {
	if h.StartLine == h.EndLine {
		return fmt.Sprintf("%s#L%d", h.Path, h.StartLine)
	}
	return fmt.Sprintf("%s#L%d-L%d", h.Path, h.StartLine, h.EndLine)
}

// indexScope is the index scope of an agent's workspace: the agent id and
// the workspace path, so that a sandboxed session's own workspace and the
// agent's are indexed apart and never see each other's notes.
func indexScope(agentID, workspace string) string {
	return agentID + "@" + filepath.Clean(workspace)
}
