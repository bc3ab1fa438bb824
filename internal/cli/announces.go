package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// errorExcerpt bounds the LAST ERROR column of "announces list".
const errorExcerpt = 60

func newAnnouncesCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "announces",
		Short: "Inspect and redeliver sub-agent completion announces",
		Long: `When a sub-agent run ends, its result is announced to the session that
spawned it. Announces that could not be delivered in time become dead
letters; these commands list them and queue them again.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newAnnouncesListCmd(g), newAnnouncesRedeliverCmd(g))
	return cmd
}

func newAnnouncesListCmd(g *globalFlags) *cobra.Command {
	var p wire.AnnouncesListParams
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List announces (dead letters by default)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				raw, err := g.callRaw(ctx, c, wire.MethodAnnouncesList, p)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if g.json {
					return writeJSON(out, raw)
				}
				var res wire.AnnouncesListResult
				if err := decodeResult(wire.MethodAnnouncesList, raw, &res); err != nil {
					return err
				}
				return printAnnounces(out, res.Announces, p.Status)
			})
		},
	}
	cmd.Flags().StringVar(&p.Status, "status", wire.AnnounceStatusDead, "which announces: dead, pending, delivered or all")
	return cmd
}

// printAnnounces writes the announces table; status is the filter, for
// the message shown when there are none.
func printAnnounces(w io.Writer, rows []wire.AnnounceRow, status string) error {
	if len(rows) == 0 {
		what := "announces"
		if status != "" && status != wire.AnnounceStatusAll {
			what = status + " announces"
		}
		_, err := fmt.Fprintf(w, "No %s.\n", what)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTARGET\tSTATUS\tATTEMPTS\tLAST ERROR")
	for _, a := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", a.ID, a.SessionKey, a.Status, a.Attempts, orDash(excerpt(a.LastError, errorExcerpt)))
	}
	return tw.Flush()
}

func newAnnouncesRedeliverCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "redeliver ID",
		Short: "Queue an undelivered announce for delivery again",
		Long: `Redeliver puts the announce ID (as "announces list" shows it) back in the
delivery queue with a fresh expiry window. Delivered announces cannot be
redelivered.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				raw, err := g.callRaw(ctx, c, wire.MethodAnnouncesRedeliver, wire.AnnouncesRedeliverParams{ID: args[0]})
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if g.json {
					return writeJSON(out, raw)
				}
				_, err = fmt.Fprintf(out, "Queued %s for redelivery.\n", args[0])
				return err
			})
		},
	}
}
