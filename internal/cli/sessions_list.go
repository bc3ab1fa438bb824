package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func newSessionsListCmd(g *globalFlags) *cobra.Command {
	var (
		p                   wire.SessionsListParams
		limit, activeMinute int
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List sessions, most recently active first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("limit") {
				p.Limit = &limit
			}
			if cmd.Flags().Changed("active") {
				p.ActiveMinutes = &activeMinute
			}
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				raw, err := g.callRaw(ctx, c, wire.MethodSessionsList, p)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if g.json {
					return writeJSON(out, raw)
				}
				var res wire.SessionsListResult
				if err := decodeResult(wire.MethodSessionsList, raw, &res); err != nil {
					return err
				}
				defaultAgent := ""
				if d := c.Hello().Snapshot.SessionDefaults; d != nil {
					defaultAgent = d.DefaultAgentID
				}
				return printSessions(out, &res, defaultAgent, time.Now())
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&limit, "limit", 0, "show at most N sessions")
	f.StringVar(&p.AgentID, "agent", "", "only sessions of this agent")
	f.IntVar(&activeMinute, "active", 0, "only sessions active in the last MINUTES")
	f.StringVar(&p.Label, "label", "", "only sessions with this label")
	f.StringVar(&p.Search, "search", "", "only sessions matching this text")
	return cmd
}

// printSessions writes the sessions table. A session without a model
// override shows the gateway's default model when it belongs to the default
// agent, the only agent whose default the list reports.
func printSessions(w io.Writer, res *wire.SessionsListResult, defaultAgent string, now time.Time) error {
	if len(res.Sessions) == 0 {
		_, err := fmt.Fprintln(w, "No sessions.")
		return err
	}
	defaultModel := joinModel(res.Defaults.ModelProvider, res.Defaults.Model)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tKIND\tAGE\tMODEL\tTOKENS\tLABEL")
	for _, s := range res.Sessions {
		model := s.Model
		if model == "" && (s.AgentID == "" || s.AgentID == defaultAgent) {
			model = defaultModel
		}
		age := "-"
		if s.UpdatedAt > 0 {
			age = relativeAge(now.Sub(time.UnixMilli(s.UpdatedAt)))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n",
			s.Key, orDash(s.Kind), age, orDash(model), formatTokens(s.TotalTokens), s.Label)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.HasMore {
		_, err := fmt.Fprintf(w, "(more sessions not shown; raise --limit)\n")
		return err
	}
	return nil
}
