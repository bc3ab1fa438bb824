package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newSkillsCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "skills",
		Short: "List agents' skills and why each is or is not available (skills.status)",
		Args:  cobra.NoArgs,
	}
	var agent string
	list := &cobra.Command{Use: "list", Short: "List an agent's skills with their gates", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			params := map[string]any{}
			if agent != "" {
				params["agentId"] = agent
			}
			return g.callTable(cmd, "skills.status", params, printSkills)
		}}
	list.Flags().StringVar(&agent, "agent", "", "agent id (default: the default agent)")
	list.SuggestFor = []string{"ls", "check"}
	cmd.AddCommand(list)
	return cmd
}

// skillRow is the part of a skills.status entry the table shows.
type skillRow struct {
	Name, Description, Source, FilePath string
	Eligible, Disabled, ModelVisible    bool
	BlockedByAgentFilter                bool
	Missing                             map[string][]string
}

// why says why a skill is not offered to the model ("" when it is).
func (r skillRow) why() string {
	switch {
	case r.Disabled:
		return "disabled (skills.entries)"
	case r.BlockedByAgentFilter:
		return "not in the agent's skills list"
	case !r.Eligible:
		var parts []string
		for _, kind := range []string{"bins", "anyBins", "env", "config", "os"} {
			if m := r.Missing[kind]; len(m) > 0 {
				parts = append(parts, "missing "+kind+": "+strings.Join(m, ", "))
			}
		}
		return strings.Join(parts, "; ")
	case !r.ModelVisible:
		return "hidden from the model (disable-model-invocation)"
	}
	return ""
}

func printSkills(w io.Writer, raw json.RawMessage) error {
	var res struct {
		WorkspaceDir, AgentID string
		Skills                []skillRow
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return err
	}
	if len(res.Skills) == 0 {
		fmt.Fprintf(w, "No skills for agent %s (looked in %s/skills, %s/.agents/skills, the state dir's skills/ and skills.load.extraDirs).\n",
			res.AgentID, res.WorkspaceDir, res.WorkspaceDir)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tSOURCE\tDESCRIPTION")
	for _, s := range res.Skills {
		status := "ready"
		if why := s.why(); why != "" {
			status = why
		}
		desc := s.Description
		if len([]rune(desc)) > 60 {
			desc = string([]rune(desc)[:57]) + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, status, s.Source, desc)
	}
	return tw.Flush()
}
