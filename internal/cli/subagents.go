package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// taskExcerpt bounds the TASK column of "subagents list".
const taskExcerpt = 48

func newSubagentsCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "subagents",
		Short: "List, wait for and kill spawned sub-agent runs",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(
		newSubagentsListCmd(g),
		newSubagentsKillCmd(g),
		newSubagentsWaitCmd(g),
	)
	return cmd
}

func newSubagentsListCmd(g *globalFlags) *cobra.Command {
	var p wire.SubagentsListParams
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List spawned sub-agent runs, newest first",
		Long: `List shows the sub-agent runs spawned with sessions_spawn: the child's run id
and session, the run's status, the state of its completion announce to the
requester (pending, delivered or dead), its task and its age. --requester
keeps the children of one session ("main" is the default agent's main
session); --active only those still running.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				raw, err := g.callRaw(ctx, c, wire.MethodSubagentsList, p)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if g.json {
					return writeJSON(out, raw)
				}
				var res wire.SubagentsListResult
				if err := decodeResult(wire.MethodSubagentsList, raw, &res); err != nil {
					return err
				}
				return printSubagents(out, res.Subagents, time.Now())
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&p.RequesterKey, "requester", "", "only children of this session KEY")
	f.BoolVar(&p.Active, "active", false, "only runs still going")
	return cmd
}

// printSubagents writes the sub-agents table.
func printSubagents(w io.Writer, subs []wire.SubagentInfo, now time.Time) error {
	if len(subs) == 0 {
		_, err := fmt.Fprintln(w, "No sub-agents.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN ID\tCHILD\tSTATUS\tANNOUNCE\tTASK\tAGE")
	for _, s := range subs {
		age := "-"
		if s.CreatedAt > 0 {
			age = relativeAge(now.Sub(time.UnixMilli(s.CreatedAt)))
		}
		task := s.Task
		if s.Label != "" {
			task = "[" + s.Label + "] " + task
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.ChildRunID, s.ChildSessionKey, orDash(s.RunStatus),
			orDash(s.AnnounceStatus), excerpt(task, taskExcerpt), age)
	}
	return tw.Flush()
}

func newSubagentsKillCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "kill RUN_ID",
		Short: "Abort a sub-agent run and everything it spawned",
		Long: `Kill aborts the sub-agent run RUN_ID. The kill cascades to descendants: every
live run the child spawned, and their children in turn, is aborted too. It
prints the ids of the runs it aborted, one per line.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				raw, err := g.callRaw(ctx, c, wire.MethodSubagentsKill, wire.SubagentsKillParams{RunID: args[0]})
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if g.json {
					return writeJSON(out, raw)
				}
				var res wire.SubagentsKillResult
				if err := decodeResult(wire.MethodSubagentsKill, raw, &res); err != nil {
					return err
				}
				if len(res.Killed) == 0 {
					_, err := fmt.Fprintf(out, "Nothing to kill: run %s and its descendants are not running.\n", args[0])
					return err
				}
				for _, id := range res.Killed {
					fmt.Fprintln(out, id)
				}
				return nil
			})
		},
	}
}

func newSubagentsWaitCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "wait RUN_ID",
		Short: "Wait for a sub-agent run to end and print its status",
		Long: `Wait blocks until the run RUN_ID ends, or --timeout (default 10m here)
passes, and prints how it ended. It exits 1 when the run failed, was aborted
or timed out, or when the wait timed out first (the run keeps going).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g.resolve(cmd)
			if !cmd.Flags().Changed("timeout") {
				g.timeout = DefaultWaitTimeout
			}
			// The gateway answers agent.wait when the timeout passes; the
			// call gets a little longer so that the answer can arrive.
			ctx, cancel := context.WithTimeout(cmd.Context(), g.timeout+5*time.Second)
			defer cancel()
			c, err := g.dial(ctx, true)
			if err != nil {
				return err
			}
			defer c.Close()
			ms := max(g.timeout.Milliseconds(), 1)
			raw, err := g.callRaw(ctx, c, wire.MethodAgentWait, wire.AgentWaitParams{RunID: args[0], TimeoutMs: &ms})
			if err != nil {
				return err
			}
			var res wire.AgentWaitResult
			if err := decodeResult(wire.MethodAgentWait, raw, &res); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			line, err := waitOutcome(&res, g.timeout)
			if g.json {
				if werr := writeJSON(out, raw); werr != nil {
					return werr
				}
			} else if line != "" {
				fmt.Fprintln(out, line)
			}
			return err
		},
	}
}

// waitOutcome describes an agent.wait result: the status line to print
// ("" when the wait, not the run, ended) and, unless the run succeeded,
// the error that makes the command exit 1.
func waitOutcome(res *wire.AgentWaitResult, waited time.Duration) (string, error) {
	took := ""
	if res.StartedAt > 0 && res.EndedAt >= res.StartedAt {
		took = " (" + (time.Duration(res.EndedAt-res.StartedAt) * time.Millisecond).String() + ")"
	}
	switch {
	case res.Status == "ok":
		return "run " + res.RunID + ": ok" + took, nil
	case res.Status == "timeout" && res.EndedAt == 0:
		return "", fmt.Errorf("run %s did not finish within %s; it keeps running on the gateway", res.RunID, waited)
	case res.Error == "aborted":
		return "run " + res.RunID + ": aborted" + took, fmt.Errorf("run %s was aborted", res.RunID)
	}
	msg := orDash(oneLine(res.Error))
	return "run " + res.RunID + ": " + res.Status + took + ": " + msg, fmt.Errorf("run %s failed: %s", res.RunID, msg)
}
