package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

func newMemoryCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Inspect, index and search agents' memory files (memory.* methods)",
		Long: `An agent's memory is MEMORY.md, USER.md and memory/**/*.md in its workspace,
indexed in the gateway's store for memory_search: by keywords, and by meaning
when memory.search names an embedding model.`,
		Args: cobra.NoArgs,
	}
	var agent string
	// withAgent adds --agent to params when given.
	withAgent := func(params map[string]any) map[string]any {
		if agent != "" {
			params["agentId"] = agent
		}
		return params
	}
	agentFlag := func(c *cobra.Command) *cobra.Command {
		c.Flags().StringVar(&agent, "agent", "", "agent id (default: the default agent)")
		return c
	}
	status := agentFlag(&cobra.Command{Use: "status", Short: "Show the index of an agent's memory", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.callTable(cmd, "memory.status", withAgent(map[string]any{}), printMemoryStatus)
		}})
	index := agentFlag(&cobra.Command{Use: "index", Short: "Index an agent's memory files now (and embed them)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.callTable(cmd, "memory.index", withAgent(map[string]any{}), printMemoryIndex)
		}})
	var maxResults int
	var minScore float64
	search := agentFlag(&cobra.Command{Use: "search QUERY", Short: "Search an agent's memory as memory_search does", Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			params := withAgent(map[string]any{"query": strings.Join(args, " ")})
			if maxResults > 0 {
				params["maxResults"] = maxResults
			}
			if minScore > 0 {
				params["minScore"] = minScore
			}
			return g.callTable(cmd, "memory.search", params, printMemorySearch)
		}})
	search.Flags().IntVar(&maxResults, "max-results", 0, "most hits to show (default 6)")
	search.Flags().Float64Var(&minScore, "min-score", 0, "lowest score to show")
	cmd.AddCommand(status, index, search, newMemoryOpenClawEnvCmd(g))
	return cmd
}

// printMemoryStatus prints memory.status in the lines and labels of the
// reference's `openclaw memory status` (Provider, Model, Sources, Indexed,
// Dirty, Workspace, Embeddings, FTS), without its dreaming and database
// diagnostics, which have no counterpart here.
func printMemoryStatus(w io.Writer, raw json.RawMessage) error {
	var st struct {
		AgentID, WorkspaceDir, Mode, Model, Reason, RequestedProvider string
		Files, Eligible, Chunks, Vectors                              int
		Dirty                                                         bool
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return err
	}
	provider, model := "none", "none"
	if st.Mode == "hybrid" {
		provider, model, _ = strings.Cut(st.Model, "/")
	}
	dirty := "no"
	if st.Dirty {
		dirty = "yes"
	}
	fmt.Fprintf(w, "Memory Search (%s)\n", st.AgentID)
	requested := ""
	if st.RequestedProvider != "" {
		requested = " (requested: " + st.RequestedProvider + ")"
	}
	fmt.Fprintf(w, "Provider: %s%s\nModel: %s\nSources: memory\n", provider, requested, model)
	fmt.Fprintf(w, "Indexed: %d/%d files · %d chunks\n", st.Files, st.Eligible, st.Chunks)
	fmt.Fprintf(w, "Dirty: %s\nWorkspace: %s\n", dirty, st.WorkspaceDir)
	if st.Mode == "hybrid" {
		fmt.Fprintf(w, "Embeddings: ready · %d/%d chunks embedded\n", st.Vectors, st.Chunks)
	} else {
		fmt.Fprintf(w, "Embeddings: unavailable · keyword search only (%s)\n", dash(st.Reason))
	}
	_, err := fmt.Fprintln(w, "FTS: ready")
	return err
}

// printMemoryIndex prints memory.index's result with the reference's
// completion line, then what the index did.
func printMemoryIndex(w io.Writer, raw json.RawMessage) error {
	var st struct {
		AgentID, WorkspaceDir, Mode, Model                   string
		Files, Indexed, Unchanged, Removed, Chunks, Embedded int
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return err
	}
	if st.Files == 0 {
		fmt.Fprintf(w, "No memory files found in %s; nothing indexed (%s).\n", st.WorkspaceDir, st.AgentID)
	} else {
		files := "files"
		if st.Files == 1 {
			files = "file"
		}
		fmt.Fprintf(w, "Memory index updated (%s): %d %s indexed.\n", st.AgentID, st.Files, files)
	}
	fmt.Fprintf(w, "%d re-indexed, %d unchanged, %d removed · %d chunks written\n", st.Indexed, st.Unchanged, st.Removed, st.Chunks)
	if st.Mode == "hybrid" {
		fmt.Fprintf(w, "Embeddings: %d chunks embedded with %s\n", st.Embedded, st.Model)
	}
	return nil
}

// printMemorySearch prints memory.search's hits as the reference's
// `openclaw memory search` does: "<score> <path>:<start>-<end>", the
// snippet, a blank line; "No matches." when there are none.
func printMemorySearch(w io.Writer, raw json.RawMessage) error {
	var res struct {
		Warnings []string
		Results  []struct {
			Path               string
			StartLine, EndLine int
			Score              float64
			Snippet            string
		}
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return err
	}
	for _, warn := range res.Warnings {
		fmt.Fprintln(w, "warning:", warn)
	}
	if len(res.Results) == 0 {
		_, err := fmt.Fprintln(w, "No matches.")
		return err
	}
	var b strings.Builder
	for _, h := range res.Results {
		fmt.Fprintf(&b, "%.3f %s:%d-%d\n%s\n\n", h.Score, h.Path, h.StartLine, h.EndLine, h.Snippet)
	}
	_, err := fmt.Fprintln(w, strings.TrimSpace(b.String()))
	return err
}
