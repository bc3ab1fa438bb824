package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// commandExcerpt bounds the COMMAND column of "approvals list".
const commandExcerpt = 60

func newApprovalsCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List and answer pending exec approvals",
		Long: `With tools.exec.ask set, a command the policy does not allow outright waits
for an operator: "approvals list" shows the pending ones and "approvals
resolve ID allow-once|allow-always|deny" answers one. A run waits only while
an approval client is connected (the web UI, or "approvals watch");
otherwise tools.exec.askFallback decides at once.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newApprovalsListCmd(g), newApprovalsResolveCmd(g), newApprovalsWatchCmd(g), newApprovalsAllowlistCmd(g))
	return cmd
}

func newApprovalsListCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List pending exec approvals",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				raw, err := g.callRaw(ctx, c, wire.MethodExecApprovalList, map[string]any{})
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if g.json {
					return writeJSON(out, raw)
				}
				var res wire.ExecApprovalListResult
				if err := decodeResult(wire.MethodExecApprovalList, raw, &res); err != nil {
					return err
				}
				return printApprovals(out, res, time.Now())
			})
		},
	}
}

// printApprovals writes the pending approvals table.
func printApprovals(w io.Writer, rows []wire.ExecApproval, now time.Time) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "No pending approvals.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSESSION\tCOMMAND\tEXPIRES IN\tDECISIONS")
	for _, a := range rows {
		left := time.UnixMilli(a.ExpiresAtMs).Sub(now).Round(time.Second)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.ID, orDash(a.Request.SessionKey),
			excerpt(oneLine(a.Request.Command), commandExcerpt), max(left, 0), strings.Join(a.Request.AllowedDecisions, "|"))
	}
	return tw.Flush()
}

func newApprovalsResolveCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "resolve ID allow-once|allow-always|deny",
		Short: "Answer a pending exec approval",
		Long: `Resolve answers the approval ID (as "approvals list" shows it): allow-once
runs the command, allow-always also adds its executables to the agent's
allowlist, deny refuses it (the model is told the command was denied).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				raw, err := g.callRaw(ctx, c, wire.MethodExecApprovalResolve, wire.ExecApprovalResolveParams{ID: args[0], Decision: args[1]})
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if g.json {
					return writeJSON(out, raw)
				}
				_, err = fmt.Fprintf(out, "Approval %s: %s.\n", args[0], args[1])
				return err
			})
		},
	}
}

func newApprovalsWatchCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "watch",
		Short: "Stay connected as an approval client and print approvals as they come",
		Long: `Watch connects declaring the exec-approvals capability, so runs wait for a
decision instead of falling back at once, and prints each request and
decision (one JSON object a line with --json) until interrupted. Answer with
"approvals resolve" from another terminal.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g.resolve(cmd)
			ctx, cancel := context.WithTimeout(cmd.Context(), g.timeout)
			c, err := g.dial(ctx, false, wire.CapExecApprovals)
			cancel()
			if err != nil {
				return err
			}
			defer c.Close()
			out := cmd.OutOrStdout()
			for {
				select {
				case <-cmd.Context().Done():
					return nil
				case ev, ok := <-c.Events():
					if !ok {
						return fmt.Errorf("lost the connection to the gateway")
					}
					if err := printApprovalEvent(out, ev.Event, ev.Payload, g.json); err != nil {
						return err
					}
				}
			}
		},
	}
}

// printApprovalEvent writes one approval event; other events are skipped.
func printApprovalEvent(w io.Writer, event string, payload json.RawMessage, asJSON bool) error {
	if event != wire.EventExecApprovalRequested && event != wire.EventExecApprovalResolved {
		return nil
	}
	if asJSON {
		b, err := json.Marshal(map[string]any{"event": event, "payload": payload})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	var p struct {
		wire.ExecApproval
		Decision string `json:"decision"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return fmt.Errorf("%s: decode: %w", event, err)
	}
	if event == wire.EventExecApprovalRequested {
		_, err := fmt.Fprintf(w, "requested %s  %s  %s  (%s)\n", p.ID, orDash(p.Request.SessionKey), oneLine(p.Request.Command),
			strings.Join(p.Request.AllowedDecisions, "|"))
		return err
	}
	_, err := fmt.Fprintf(w, "resolved  %s  %s\n", p.ID, p.Decision)
	return err
}

func newApprovalsAllowlistCmd(g *globalFlags) *cobra.Command {
	var agent string
	cmd := &cobra.Command{
		Use:   "allowlist",
		Short: "Show the effective exec policy and the agents' allowlists",
		Long: `Allowlist prints the default agent's effective tools.exec policy and the
allowlist entries of the approvals document (allow-always adds to it), for
every agent or the one --agent names.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				raw, err := g.callRaw(ctx, c, wire.MethodExecApprovalsGet, map[string]any{})
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if g.json {
					return writeJSON(out, raw)
				}
				var res wire.ExecApprovalsGetResult
				if err := decodeResult(wire.MethodExecApprovalsGet, raw, &res); err != nil {
					return err
				}
				return printAllowlists(out, &res, agent)
			})
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "only this agent's allowlist")
	return cmd
}

// printAllowlists writes the policy line and the allowlist table.
func printAllowlists(w io.Writer, res *wire.ExecApprovalsGetResult, agent string) error {
	d := res.ResolvedDefaults
	fmt.Fprintf(w, "Policy: security=%s ask=%s askFallback=%s\nFile: %s\n", d.Security, d.Ask, d.AskFallback, res.Path)
	ids := make([]string, 0, len(res.File.Agents))
	for id := range res.File.Agents {
		if agent == "" || id == agent {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	rows := 0
	for _, id := range ids {
		for _, e := range res.File.Agents[id].Allowlist {
			if rows == 0 {
				fmt.Fprintln(tw, "AGENT\tPATTERN\tSOURCE\tLAST COMMAND")
			}
			rows++
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", id, e.Pattern, orDash(e.Source), orDash(excerpt(oneLine(e.LastUsedCommand), commandExcerpt)))
		}
	}
	if rows == 0 {
		_, err := fmt.Fprintln(w, "No allowlist entries.")
		return err
	}
	return tw.Flush()
}
