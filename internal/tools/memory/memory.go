// Package memory owns the agent's memory tools, memory_search and
// memory_get, with the reference's parameters and result shapes. They work
// on the calling session's workspace (tools.Caller.Workspace) and index it
// under the caller's agent id through internal/memory; the search is
// keyword-only (no embedding provider is wired yet) and says so in its
// result.
package memory

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/switchboardhq/switchboard/internal/memory"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// Wire names of the tools.
const (
	SearchToolName = "memory_search"
	GetToolName    = "memory_get"
)

// filesDescription lists the files the tools cover, as the reference words
// it.
const filesDescription = "MEMORY.md, USER.md, Markdown files recursively under memory/"

// KeywordOnlyNote is the note of a keyword-only search result: no
// embedding provider is configured (or it failed), so hits share words with
// the query.
const KeywordOnlyNote = "Keyword search only (SQLite FTS5 / PostgreSQL full-text): semantic (embedding) search is not available, so results must share words with the query."

// All returns memory_search (searching idx) and memory_get.
func All(idx *memory.Index) []tools.Tool {
	return []tools.Tool{searchTool{idx: idx}, getTool{}}
}

var searchSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "query": {"type": "string"},
    "maxResults": {"type": "integer", "minimum": 1},
    "minScore": {"type": "number"},
    "corpus": {"type": "string", "enum": ["memory", "wiki", "all", "sessions"]}
  },
  "required": ["query"],
  "additionalProperties": false
}`)

var getSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "from": {"type": "integer", "minimum": 1},
    "lines": {"type": "integer", "minimum": 1},
    "corpus": {"type": "string", "enum": ["memory", "wiki", "all"]}
  },
  "required": ["path"],
  "additionalProperties": false
}`)

// caller returns the calling agent and its workspace.
func caller(ctx context.Context) (agentID, workspace string, err error) {
	if err := ctx.Err(); err != nil {
		return "", "", err
	}
	c := tools.CallerFrom(ctx)
	workspace = strings.TrimSpace(c.Workspace)
	if workspace == "" {
		return "", "", errors.New("no workspace: this session has no workspace directory")
	}
	agentID = c.AgentID
	if agentID == "" {
		agentID = sessionkey.AgentID(c.SessionKey)
	}
	return cmpOr(agentID, "main"), workspace, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// corpus reads and checks the corpus parameter.
func corpus(p tools.Params, allowed ...string) (string, error) {
	c := p.String("corpus")
	if c == "" {
		return "memory", nil
	}
	for _, a := range allowed {
		if c == a {
			return c, nil
		}
	}
	return "", tools.InputErrorf("corpus must be one of %s", strings.Join(allowed, ", "))
}

// wikiWarning is the reference's note for a corpus with no registered
// supplement.
const wikiWarning = "wiki corpus is not registered; results do not cover that requested corpus."
