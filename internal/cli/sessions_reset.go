package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func newSessionsResetCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "reset KEY",
		Short: "Start a fresh transcript for a session, aborting its runs",
		Long: `Reset gives session KEY a new session id, so the next message starts from an
empty context. Settings such as the label and model stay; the old transcript
stays in the store.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				raw, err := g.callRaw(ctx, c, wire.MethodSessionsReset, wire.SessionsResetParams{Key: args[0], Reason: "reset"})
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if g.json {
					return writeJSON(out, raw)
				}
				var res wire.SessionsEntryResult
				if err := decodeResult(wire.MethodSessionsReset, raw, &res); err != nil {
					return err
				}
				_, err = fmt.Fprintf(out, "Reset %s (new session id %s).\n", res.Key, orDash(res.Entry.SessionID))
				return err
			})
		},
	}
}
