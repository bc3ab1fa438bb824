package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func newSessionsDeleteCmd(g *globalFlags) *cobra.Command {
	var keep bool
	cmd := &cobra.Command{
		Use:   "delete KEY",
		Short: "Delete a session (aborting its runs) and, unless told otherwise, its transcript",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := wire.SessionsDeleteParams{Key: args[0]}
			if keep {
				f := false
				p.DeleteTranscript = &f
			}
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				raw, err := g.callRaw(ctx, c, wire.MethodSessionsDelete, p)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if g.json {
					return writeJSON(out, raw)
				}
				var res wire.SessionsDeleteResult
				if err := decodeResult(wire.MethodSessionsDelete, raw, &res); err != nil {
					return err
				}
				if !res.Deleted {
					_, err = fmt.Fprintf(out, "No session %s: nothing deleted.\n", res.Key)
					return err
				}
				_, err = fmt.Fprintf(out, "Deleted %s.\n", res.Key)
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&keep, "keep-transcript", false, "keep the transcript in the store")
	return cmd
}
