package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// queueExcerpt bounds a pending message in the queue listing.
const queueExcerpt = 80

func newSessionsQueueCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "queue KEY",
		Short: "Show the messages waiting for a busy session",
		Long: `Queue prints the session's accepted input that has not run yet, oldest
first, one line each: state, runId, when it was accepted and the message
(at most 20 lines; the header counts them all). Messages cancelled before they ran (aborted, dropped at the queue
cap) follow as "cancelled".`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				if err := g.requireSession(ctx, c, args[0]); err != nil {
					return err
				}
				limit := 1
				raw, err := g.callRaw(ctx, c, wire.MethodChatHistory, wire.ChatHistoryParams{SessionKey: args[0], Limit: &limit})
				if err != nil {
					return err
				}
				var res wire.ChatHistoryResult
				if err := decodeResult(wire.MethodChatHistory, raw, &res); err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				p := res.PendingInputs
				if p == nil {
					p = &wire.PendingInputs{Items: []wire.PendingInput{}}
				}
				if g.json {
					return writeJSON(out, p)
				}
				queued := 0
				for _, it := range p.Items {
					if it.State == "queued" {
						queued++
					}
				}
				if _, err := fmt.Fprintf(out, "%s: %d queued (%d pending inputs)\n", res.SessionKey, queued, p.Total); err != nil {
					return err
				}
				for _, it := range p.Items {
					at := time.UnixMilli(it.AcceptedAt).UTC().Format(time.RFC3339)
					if _, err := fmt.Fprintf(out, "  %-9s %s  %s  %s\n", it.State, it.RunID, at, excerpt(it.Message, queueExcerpt)); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
}
