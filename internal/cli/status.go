package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func newStatusCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Connect to the gateway and show its version, defaults and health",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				return g.status(ctx, cmd, c)
			})
		},
	}
}

// statusJSON is what status --json prints.
type statusJSON struct {
	Hello  *wire.HelloOK   `json:"hello"`
	Health json.RawMessage `json:"health"`
}

func (g *globalFlags) status(ctx context.Context, cmd *cobra.Command, c *conn) error {
	raw, err := g.callRaw(ctx, c, wire.MethodHealth, nil)
	if err != nil {
		return err
	}
	hello := c.Hello()
	out := cmd.OutOrStdout()
	if g.json {
		return writeJSON(out, statusJSON{Hello: hello, Health: raw})
	}
	var health wire.Health
	if err := json.Unmarshal(raw, &health); err != nil {
		return fmt.Errorf("health: decode result: %w", err)
	}

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("Gateway:", g.shownURL())
	row("Version:", orDash(hello.Server.Version))
	row("Protocol:", fmt.Sprint(hello.Protocol))
	row("Conn ID:", orDash(hello.Server.ConnID))
	row("Uptime:", formatUptime(time.Duration(hello.Snapshot.UptimeMs)*time.Millisecond))
	auth := orDash(hello.Auth.Method)
	if hello.Auth.Role != "" {
		auth += " (" + hello.Auth.Role + ")"
	}
	row("Auth:", auth)
	if d := hello.Snapshot.SessionDefaults; d != nil {
		row("Default agent:", orDash(d.DefaultAgentID))
		model := "not configured (built-in default)"
		if d.ModelConfigured {
			model = "configured"
		}
		// sessions.list reports the model the default agent resolves to.
		var list wire.SessionsListResult
		if c.Call(ctx, wire.MethodSessionsList, map[string]any{"limit": 1}, &list) == nil && list.Defaults.Model != "" {
			model = joinModel(list.Defaults.ModelProvider, list.Defaults.Model) + " (" + model + ")"
		}
		row("Default model:", model)
		row("Main session:", orDash(d.MainSessionKey))
		row("Session scope:", orDash(d.Scope))
	}
	state := "ok"
	if !health.OK {
		state = "NOT OK"
	}
	row("Health:", fmt.Sprintf("%s (%dms)", state, health.DurationMs))
	return tw.Flush()
}

// formatUptime rounds d to the second ("1h2m3s").
func formatUptime(d time.Duration) string {
	return d.Round(time.Second).String()
}

// joinModel returns "<provider>/<model>", or the model alone.
func joinModel(provider, model string) string {
	if provider == "" || strings.HasPrefix(model, provider+"/") {
		return model
	}
	return provider + "/" + model
}

// orDash returns s, or "-" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
