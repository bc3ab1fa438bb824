package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// newChannelsCmd is `switchboard channels`, with `status`.
func newChannelsCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "channels",
		Short: "Chat channel connectors (channels.irc, channels.telegram)",
		Args:  cobra.NoArgs,
	}
	var probe bool
	status := &cobra.Command{
		Use:   "status",
		Short: "Show each chat channel connector's state (channels.status)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				raw, err := g.callRaw(ctx, c, wire.MethodChannelsStatus, map[string]any{"probe": probe})
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if g.json {
					_, err := fmt.Fprintf(out, "%s\n", raw)
					return err
				}
				var res wire.ChannelsStatusResult
				if err := json.Unmarshal(raw, &res); err != nil {
					return fmt.Errorf("channels.status: decode result: %w", err)
				}
				return writeChannels(out, res)
			})
		},
	}
	status.Flags().BoolVar(&probe, "probe", false, "accepted for the reference's CLI; the state shown is always live")
	cmd.AddCommand(status)
	return cmd
}

// writeChannels renders channels.status as a table.
func writeChannels(out io.Writer, res wire.ChannelsStatusResult) error {
	if len(res.ChannelOrder) == 0 {
		_, err := fmt.Fprintln(out, "No chat channels configured (channels.irc, channels.telegram).")
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANNEL\tACCOUNT\tSTATE\tSERVER\tNICK\tROOMS\tRECONNECTS\tIN\tOUT")
	for _, ch := range res.ChannelOrder {
		for _, a := range res.ChannelAccounts[ch] {
			state := a.State
			if a.LastError != "" {
				state += " (" + oneLine(a.LastError) + ")"
			}
			rooms := "-"
			if len(a.Rooms) > 0 {
				rooms = strings.Join(a.Rooms, ",")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\n", ch, a.AccountID, state, a.Server, a.Nick, rooms, a.Reconnects, a.Inbound, a.Outbound)
		}
	}
	return tw.Flush()
}
