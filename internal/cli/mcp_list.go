package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// newMCPListCmd is `switchboard mcp list`: the configured MCP servers as
// the running gateway sees them (state, restarts, tools).
func newMCPListCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "Show the configured MCP servers (mcp.servers), their state and tools",
		Long: `Show the MCP servers of the gateway's config (mcp.servers), their state and their tools.
Servers start when a run first needs tools, so a server no run has used yet is "idle".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				raw, err := g.callRaw(ctx, c, wire.MethodMCPList, nil)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if g.json {
					_, err := fmt.Fprintf(out, "%s\n", raw)
					return err
				}
				var res wire.MCPListResult
				if err := json.Unmarshal(raw, &res); err != nil {
					return fmt.Errorf("mcp.list: decode result: %w", err)
				}
				if len(res.Servers) == 0 {
					fmt.Fprintln(out, "No MCP servers configured (mcp.servers).")
					return nil
				}
				tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tSTATE\tTRANSPORT\tRESTARTS\tTOOLS\tTARGET")
				for _, s := range res.Servers {
					state := s.State
					if s.LastError != "" {
						state += " (" + oneLine(s.LastError) + ")"
					}
					tools := "-"
					if len(s.Tools) > 0 {
						tools = fmt.Sprintf("%d: %s", len(s.Tools), strings.Join(s.Tools, ", "))
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", s.Name, state, s.Transport, s.Restarts, tools, s.Target)
				}
				return tw.Flush()
			})
		},
	}
}
