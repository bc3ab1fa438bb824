package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// toolExcerpt bounds tool arguments and results in a transcript.
const toolExcerpt = 120

func newSessionsHistoryCmd(g *globalFlags) *cobra.Command {
	var (
		limit int
		tools bool
	)
	cmd := &cobra.Command{
		Use:   "history KEY",
		Short: "Print a session's transcript",
		Long: `History prints a session's messages as "role: text", oldest first: the
last 200 unless --limit says otherwise, with a line on stderr when older ones
were left out. With --tools, tool calls and tool results are shown too, one
line each.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := wire.ChatHistoryParams{SessionKey: args[0]}
			if cmd.Flags().Changed("limit") {
				p.Limit = &limit
			}
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				if err := g.requireSession(ctx, c, args[0]); err != nil {
					return err
				}
				raw, err := g.callRaw(ctx, c, wire.MethodChatHistory, p)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if g.json {
					return writeJSON(out, raw)
				}
				var res wire.ChatHistoryResult
				if err := decodeResult(wire.MethodChatHistory, raw, &res); err != nil {
					return err
				}
				if len(res.Messages) == 0 {
					_, err := fmt.Fprintf(out, "No messages in %s.\n", res.SessionKey)
					return err
				}
				for _, m := range res.Messages {
					msg, err := decodeMessage(m)
					if err != nil {
						return fmt.Errorf("%s: decode message: %w", wire.MethodChatHistory, err)
					}
					if err := printMessage(out, msg, tools); err != nil {
						return err
					}
				}
				return olderHint(cmd.ErrOrStderr(), &res, args[0])
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "show the last N messages (1-1000; default 200)")
	cmd.Flags().BoolVar(&tools, "tools", false, "include tool calls and results")
	return cmd
}

// olderHint says on w, when the page printed is not the whole transcript,
// how much was left out and how to see it: without it, the default 200
// read as the whole history.
func olderHint(w io.Writer, res *wire.ChatHistoryResult, key string) error {
	if res.HasMore == nil || !*res.HasMore || res.TotalMessages == nil {
		return nil
	}
	_, err := fmt.Fprintf(w, "(the last %d of %d transcript entries; --limit N shows up to 1000, and `switchboard sessions export %s` writes them all)\n",
		len(res.Messages), *res.TotalMessages, key)
	return err
}

// printMessage writes one transcript message: "role: text" with
// continuation lines indented, and with tools, one line per tool call or
// result.
func printMessage(w io.Writer, m chatMessage, tools bool) error {
	var b strings.Builder
	if m.Role == "toolResult" || m.Role == "tool" {
		if !tools {
			return nil
		}
		verb := "result"
		if m.IsError {
			verb = "error"
		}
		fmt.Fprintf(&b, "tool %s %s: %s\n", verb, orDash(m.ToolName), orEmpty(excerpt(m.text(), toolExcerpt)))
		_, err := io.WriteString(w, b.String())
		return err
	}
	var text, calls []string
	for _, bl := range m.blocks() {
		switch bl.Type {
		case "text":
			if t := strings.TrimSpace(bl.Text); t != "" {
				text = append(text, t)
			}
		case "toolCall":
			calls = append(calls, fmt.Sprintf("tool call %s %s\n", orDash(bl.Name), excerpt(string(bl.Arguments), toolExcerpt)))
		}
	}
	if len(text) == 0 && m.ErrorMessage != "" {
		text = append(text, "(error: "+oneLine(m.ErrorMessage)+")")
	}
	if len(text) > 0 {
		body := strings.Join(text, "\n")
		who := m.Role
		if o := m.origin(); o != "" {
			who += " (" + o + ")"
		}
		b.WriteString(who + ": " + strings.ReplaceAll(body, "\n", "\n  ") + "\n")
	}
	if tools {
		for _, c := range calls {
			b.WriteString(c)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// orEmpty returns s, or "(empty)" when s is empty.
func orEmpty(s string) string {
	if s == "" {
		return "(empty)"
	}
	return s
}
