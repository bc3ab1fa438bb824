package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func newSessionsSearchCmd(g *globalFlags) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "search KEY QUERY",
		Short: "Search a session's history, reset and compacted history included",
		Long: `Search prints the messages of the session that contain QUERY (case
insensitive), newest first: those of its current transcript and of the
transcripts it had before each reset, one line each with the time, the
role and the text around the match. Archived transcripts are marked with
their session id; read one with "switchboard call chat.history" and its
sessionId, or page back to it with historyCursor.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				raw, err := g.callRaw(ctx, c, wire.MethodSessionsSearch, wire.SessionsSearchParams{Key: args[0], Query: args[1], Limit: limit})
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if g.json {
					return writeJSON(out, raw)
				}
				var res wire.SessionsSearchResult
				if err := decodeResult(wire.MethodSessionsSearch, raw, &res); err != nil {
					return err
				}
				if len(res.Matches) == 0 {
					_, err := fmt.Fprintf(out, "no message in %s contains %q\n", res.Key, args[1])
					return err
				}
				for _, m := range res.Matches {
					at := "-"
					if m.Timestamp > 0 {
						at = time.UnixMilli(m.Timestamp).UTC().Format(time.RFC3339)
					}
					where := ""
					if !m.Current {
						where = " [before reset, " + m.SessionID + "]"
					}
					if _, err := fmt.Fprintf(out, "%s  %-10s #%d%s  %s\n", at, m.Role, m.Seq, where, oneLine(m.Text)); err != nil {
						return err
					}
				}
				if res.Truncated {
					_, err := fmt.Fprintln(out, "(search stopped at its scan bound; older history was not searched)")
					return err
				}
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many matches (default 50, at most 500)")
	return cmd
}
