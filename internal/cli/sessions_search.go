package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func newSessionsSearchCmd(g *globalFlags) *cobra.Command {
	var (
		limit int
		keys  []string
		agent string
	)
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Search sessions' history, reset history included",
		Long: `Search prints the user and assistant messages that contain QUERY (case
insensitive), newest first: of the sessions named with --key, else of the
most recently updated ones (of --agent). Each session's current transcript
is searched and then the ones it had before each reset. One line per hit:
time, session key, role, and the text around the match; hits from before a
reset name their transcript's session id. Read around a hit with
"switchboard call chat.history" and its sessionId and messageId.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				p := wire.SessionsSearchParams{Query: args[0], SessionKeys: keys, AgentID: agent, Limit: limit}
				raw, err := g.callRaw(ctx, c, wire.MethodSessionsSearch, p)
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
				if len(res.Results) == 0 {
					_, err := fmt.Fprintf(out, "no message contains %q\n", args[0])
					return err
				}
				current := map[string]string{}
				for _, h := range res.Results {
					if _, ok := current[h.SessionKey]; !ok {
						current[h.SessionKey] = g.currentSessionID(ctx, c, h.SessionKey)
					}
					at := time.UnixMilli(h.Timestamp).UTC().Format(time.RFC3339)
					where := ""
					if cur := current[h.SessionKey]; cur != "" && h.SessionID != cur {
						where = " [before reset, " + h.SessionID + "]"
					}
					if _, err := fmt.Fprintf(out, "%s  %s  %-9s%s  %s\n", at, h.SessionKey, h.Role, where, oneLine(h.Snippet)); err != nil {
						return err
					}
				}
				if res.Truncated {
					_, err := fmt.Fprintln(out, "(the search stopped at its scan bound; older history was not searched)")
					return err
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&limit, "limit", 0, "at most this many hits (default 10, at most 25)")
	f.StringArrayVar(&keys, "key", nil, "search this session (repeatable; default: the most recently updated ones)")
	f.StringVar(&agent, "agent", "", "search this agent's sessions")
	return cmd
}

// currentSessionID returns the session id a key has now ("" when it
// cannot be read).
func (g *globalFlags) currentSessionID(ctx context.Context, c *conn, key string) string {
	limit := 1
	raw, err := c.CallRaw(ctx, wire.MethodChatHistory, wire.ChatHistoryParams{SessionKey: key, Limit: &limit})
	if err != nil {
		return ""
	}
	var res wire.ChatHistoryResult
	if decodeResult(wire.MethodChatHistory, raw, &res) != nil {
		return ""
	}
	return res.SessionID
}
