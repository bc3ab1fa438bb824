package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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
			if list.Defaults.ModelProvider == "scripted" {
				model = "built-in offline model"
			}
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
	var nodes struct {
		Nodes *wire.NodesList `json:"nodes"`
	}
	if json.Unmarshal(raw, &nodes) == nil && nodes.Nodes != nil && nodes.Nodes.Backend == "postgres" {
		row("Node:", nodes.Nodes.NodeID)
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(out)
		return writeNodes(out, nodes.Nodes, time.Now())
	}
	return tw.Flush()
}

// writeNodes prints the gateway nodes sharing the database: their state,
// when their lease ends, and their load. The answering node is marked *.
func writeNodes(out io.Writer, l *wire.NodesList, now time.Time) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tADDRESS\tSTATE\tLEASE\tRUNNING\tQUEUED\tLANES\tVERSION")
	for _, n := range l.Nodes {
		id := n.NodeID
		if n.Self {
			id += " *"
		}
		state := n.State
		if !n.Alive {
			state = "dead (lease ended)"
		}
		lease := "-"
		if n.LeaseExpiresAtMs > 0 {
			left := time.UnixMilli(n.LeaseExpiresAtMs).Sub(now).Round(100 * time.Millisecond)
			if left >= 0 {
				lease = "ends in " + left.String()
			} else {
				lease = "ended " + (-left).String() + " ago"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", id, orDash(n.Address), state, lease, n.ActiveRuns, n.QueuedRuns, n.Lanes, orDash(n.Version))
	}
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
