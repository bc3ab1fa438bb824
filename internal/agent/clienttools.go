package agent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// ClientToolConflict starts the error of a run whose caller's tools
// collide with the agent's tools or with each other (the reference's text).
const ClientToolConflict = "client tool name conflict:"

// withClientTools adds the caller's tools to the agent's tool definitions
// and returns the set of names that belong to the caller. Names compare
// case-insensitively and trimmed; a client tool named like an agent tool or
// like another client tool fails the run before the model is called, as
// the reference does, so a caller can never shadow what the operator set up.
func withClientTools(defs, client []provider.ToolDef) ([]provider.ToolDef, map[string]bool, error) {
	if len(client) == 0 {
		return defs, nil, nil
	}
	norm := func(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
	taken := make(map[string]bool, len(defs))
	for _, d := range defs {
		taken[norm(d.Name)] = true
	}
	seen := make(map[string]string, len(client))
	var conflicts []string
	for _, c := range client {
		n := norm(c.Name)
		if n == "" {
			continue
		}
		if taken[n] && !slices.Contains(conflicts, c.Name) {
			conflicts = append(conflicts, c.Name)
		}
		if prior, ok := seen[n]; ok {
			for _, name := range []string{prior, c.Name} {
				if !slices.Contains(conflicts, name) {
					conflicts = append(conflicts, name)
				}
			}
			continue
		}
		seen[n] = c.Name
	}
	if len(conflicts) > 0 {
		return nil, nil, fmt.Errorf("%s %s", ClientToolConflict, strings.Join(conflicts, ", "))
	}
	names := make(map[string]bool, len(client))
	for _, c := range client {
		if strings.TrimSpace(c.Name) == "" {
			continue
		}
		names[c.Name] = true
		defs = append(defs, c)
	}
	return defs, names, nil
}

// splitClientCalls splits a turn's tool calls into the agent's, which the
// run executes, and the caller's, which stay pending.
func splitClientCalls(calls []transcript.Block, client map[string]bool) (agent, pending []transcript.Block) {
	if len(client) == 0 {
		return calls, nil
	}
	for _, c := range calls {
		if client[c.Name] {
			pending = append(pending, c)
		} else {
			agent = append(agent, c)
		}
	}
	return agent, pending
}
