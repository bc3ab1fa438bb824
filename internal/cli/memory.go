package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

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

func printMemoryStatus(w io.Writer, raw json.RawMessage) error {
	var st struct {
		AgentID, WorkspaceDir, Mode, Model, Reason string
		Files, Chunks, Vectors                     int
		Dirty                                      bool
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Agent:\t%s\n", st.AgentID)
	fmt.Fprintf(tw, "Workspace:\t%s\n", st.WorkspaceDir)
	fresh := "up to date"
	if st.Dirty {
		fresh = "files changed since the last index (the next search or `switchboard memory index` updates it)"
	}
	fmt.Fprintf(tw, "Indexed:\t%d files, %d chunks; %s\n", st.Files, st.Chunks, fresh)
	if st.Mode == "hybrid" {
		fmt.Fprintf(tw, "Search:\thybrid (keywords and %s vectors: %d of %d chunks embedded)\n", st.Model, st.Vectors, st.Chunks)
	} else {
		fmt.Fprintf(tw, "Search:\tkeywords only (%s)\n", dash(st.Reason))
	}
	return tw.Flush()
}

func printMemoryIndex(w io.Writer, raw json.RawMessage) error {
	var st struct {
		AgentID, Mode, Model                                 string
		Files, Indexed, Unchanged, Removed, Chunks, Embedded int
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return err
	}
	fmt.Fprintf(w, "Indexed %s's memory: %d files (%d re-indexed, %d unchanged, %d removed), %d chunks written.\n",
		st.AgentID, st.Files, st.Indexed, st.Unchanged, st.Removed, st.Chunks)
	if st.Mode == "hybrid" {
		fmt.Fprintf(w, "Vectors: %d chunks embedded with %s.\n", st.Embedded, st.Model)
	}
	return nil
}

func printMemorySearch(w io.Writer, raw json.RawMessage) error {
	var res struct {
		Mode, Provider, Model string
		Warnings              []string
		Results               []struct {
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
		fmt.Fprintf(w, "No matches (%s search).\n", res.Mode)
		return nil
	}
	for i, h := range res.Results {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s#L%d-L%d  score %.3f\n", h.Path, h.StartLine, h.EndLine, h.Score)
		for _, line := range strings.Split(strings.TrimRight(h.Snippet, "\n"), "\n") {
			fmt.Fprintln(w, "  "+line)
		}
	}
	return nil
}
