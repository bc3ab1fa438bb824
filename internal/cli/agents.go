package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func newAgentsCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "Show the gateway's agents",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newAgentsListCmd(g))
	return cmd
}

func newAgentsListCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the configured agents",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				raw, err := g.callRaw(ctx, c, wire.MethodAgentsList, nil)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if g.json {
					return writeJSON(out, raw)
				}
				var res wire.AgentsListResult
				if err := decodeResult(wire.MethodAgentsList, raw, &res); err != nil {
					return err
				}
				// An agent without a model of its own uses the gateway's
				// default model, which sessions.list reports.
				defaultModel := ""
				var list wire.SessionsListResult
				if c.Call(ctx, wire.MethodSessionsList, map[string]any{"limit": 1}, &list) == nil {
					defaultModel = joinModel(list.Defaults.ModelProvider, list.Defaults.Model)
				}
				tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tNAME\tMODEL\tDEFAULT\tREMOTE")
				for _, a := range res.Agents {
					model := defaultModel
					if a.Model != nil && a.Model.Primary != "" {
						model = a.Model.Primary
					}
					def := ""
					if a.ID == res.DefaultID {
						def = "yes"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", a.ID, orDash(a.Name), orDash(model), def)
				}
				// Remote A2A peers, reached with sessions_send to a2a:<peer>.
				for _, p := range res.RemotePeers {
					fmt.Fprintf(tw, "%s\t%s\t-\t\tyes\n", p.SessionKey, p.Name)
				}
				return tw.Flush()
			})
		},
	}
}
