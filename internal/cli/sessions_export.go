package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func newSessionsExportCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "export KEY",
		Short: "Write a session's transcript as JSONL (the reference's transcript format) on the gateway host",
		Long: `Export writes the current transcript of session KEY to
<state dir>/agents/<agentId>/sessions/<sessionId>.jsonl on the gateway's host,
in the reference's JSONL transcript format (a header line, then one entry per
line), and prints the path.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				raw, err := g.callRaw(ctx, c, wire.MethodSessionsExport, wire.SessionsExportParams{Key: args[0]})
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if g.json {
					return writeJSON(out, raw)
				}
				var res wire.SessionsExportResult
				if err := decodeResult(wire.MethodSessionsExport, raw, &res); err != nil {
					return err
				}
				_, err = fmt.Fprintln(out, res.Path)
				return err
			})
		},
	}
}
