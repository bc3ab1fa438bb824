package cli

import (
	"cmp"
	"io"
	"log/slog"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/mcp"
)

// newMCPCmd is `switchboard mcp`: an MCP server on stdio that forwards to
// the running gateway's /mcp endpoint, so the gateway decides every call
// with the chosen session's policy.
func newMCPCmd(g *globalFlags) *cobra.Command {
	var session string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the session tools to an MCP host (Claude Code, Codex, …) over stdio, through the running gateway",
		Long: `Serve sessions_list, sessions_history, sessions_send, sessions_spawn and agents_list,
and session transcripts as resources, to an MCP host over stdio. Calls go to the
running gateway's /mcp endpoint with the gateway token, acting as --session
(default: the default agent's main session). Example host config:

  {"mcpServers": {"switchboard": {"command": "switchboard", "args": ["mcp", "--session", "main"]}}}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g.resolve(cmd)
			endpoint, err := mcp.EndpointFromGatewayURL(g.url)
			if err != nil {
				return err
			}
			// stdout carries the protocol: logs go to stderr only.
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			cfg := mcp.ProxyConfig{
				Endpoint: endpoint,
				Token:    cmp.Or(g.token, g.password),
				Session:  session,
				Version:  VersionString(),
				Logger:   log,
			}
			if cfg.Token == "" {
				cfg.Missing = g.missingCredentials()
			}
			return mcp.Proxy(cmd.Context(), cfg, &sdk.IOTransport{Reader: io.NopCloser(cmd.InOrStdin()), Writer: nopWriteCloser{cmd.OutOrStdout()}})
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "session key the MCP client acts as (default: the default agent's main session)")
	cmd.AddCommand(newMCPListCmd(g))
	return cmd
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
