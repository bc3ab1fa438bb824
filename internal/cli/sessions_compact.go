package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// nothingPrefix opens the reason of a compaction that found nothing to
// summarise.
const nothingPrefix = compaction.NothingToCompact

func newSessionsCompactCmd(g *globalFlags) *cobra.Command {
	var maxLines int
	cmd := &cobra.Command{
		Use:   "compact KEY",
		Short: "Compact a session's context into a summary now",
		Long: `Compact summarises the older turns of session KEY (the gateway's sessions.compact):
the model's next request carries the summary and the recent turns verbatim. The
full history stays stored. With --max-lines N the model keeps only the last N
transcript entries, without a summary.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := wire.SessionsCompactParams{Key: args[0]}
			if cmd.Flags().Changed("max-lines") {
				if maxLines < 1 {
					return fmt.Errorf("--max-lines must be at least 1")
				}
				p.MaxLines = &maxLines
			}
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				raw, err := g.callRaw(ctx, c, wire.MethodSessionsCompact, p)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if g.json {
					return writeJSON(out, raw)
				}
				var res wire.SessionsCompactResult
				if err := decodeResult(wire.MethodSessionsCompact, raw, &res); err != nil {
					return err
				}
				switch {
				case !res.Compacted:
					// The gateway says why: "nothing to compact: <why>".
					why := strings.TrimSpace(res.Reason)
					if len(why) >= len(nothingPrefix) && strings.EqualFold(why[:len(nothingPrefix)], nothingPrefix) {
						why = strings.TrimSpace(strings.TrimPrefix(why[len(nothingPrefix):], ":"))
					}
					if why == "" {
						_, err = fmt.Fprintf(out, "Nothing to compact in %s.\n", res.Key)
					} else {
						_, err = fmt.Fprintf(out, "Nothing to compact in %s (%s).\n", res.Key, why)
					}
				case res.Kept != nil:
					_, err = fmt.Fprintf(out, "Compacted %s: the model keeps the last %d entries.\n", res.Key, *res.Kept)
				case res.Result != nil:
					_, err = fmt.Fprintf(out, "Compacted %s (%s → %s tokens).\n", res.Key,
						compaction.FormatTokens(res.Result.TokensBefore), compaction.FormatTokens(res.Result.TokensAfter))
				}
				return err
			})
		},
	}
	cmd.Flags().IntVar(&maxLines, "max-lines", 0, "keep only the last N transcript entries, without a summary")
	return cmd
}
