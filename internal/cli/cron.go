package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func newCronCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cron",
		Short: "Manage scheduled jobs (cron.* methods)",
		Long: `Cron jobs run an agent turn (or a system event) on a schedule: once at a
time (--at), every interval (--every) or by cron expression (--cron, with
--tz). Each run uses the session cron:<jobId>, or main with --session main.`,
		Args: cobra.NoArgs,
	}
	simple := func(use, short, method string, build func(args []string) any) *cobra.Command {
		return &cobra.Command{
			Use: use, Short: short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return g.cronCall(cmd, method, build(args))
			},
		}
	}
	byID := func(args []string) any { return map[string]any{"id": args[0]} }
	var force bool
	run := simple("run ID", "Run a job now", "cron.run", nil)
	run.RunE = func(cmd *cobra.Command, args []string) error {
		mode := "due"
		if force {
			mode = "force"
		}
		return g.callTable(cmd, "cron.run", map[string]any{"id": args[0], "mode": mode}, printCronRun)
	}
	run.Flags().BoolVar(&force, "force", true, "run even when the job is not due")
	status := &cobra.Command{Use: "status", Short: "Show scheduler status", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return g.cronCall(cmd, "cron.status", map[string]any{}) }}
	rm := simple("rm ID", "Remove a job", "cron.remove", byID)
	rm.SuggestFor = []string{"remove", "delete", "del"}
	cmd.AddCommand(newCronListCmd(g), newCronAddCmd(g), status, run,
		simple("get ID", "Show a job", "cron.get", byID),
		newCronRunsCmd(g),
		rm,
		simple("enable ID", "Enable a job", "cron.enable", byID),
		simple("disable ID", "Disable a job", "cron.disable", byID),
	)
	return cmd
}

// callTable calls method and prints its result with print, or as JSON
// with --json.
func (g *globalFlags) callTable(cmd *cobra.Command, method string, params any,
	print func(w io.Writer, raw json.RawMessage) error) error {
	return g.withConn(cmd, func(ctx context.Context, c *conn) error {
		raw, err := g.callRaw(ctx, c, method, params)
		if err != nil {
			return err
		}
		if g.json {
			return writeJSON(cmd.OutOrStdout(), raw)
		}
		if err := print(cmd.OutOrStdout(), raw); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		return nil
	})
}

// printCronJob prints one job (cron.add's result) as a cron list table.
func printCronJob(w io.Writer, raw json.RawMessage) error {
	var job cronRow
	if err := json.Unmarshal(raw, &job); err != nil {
		return err
	}
	return printCronJobs(w, []cronRow{job})
}

// printCronRun prints cron.run's result: the run started, or why not.
func printCronRun(w io.Writer, raw json.RawMessage) error {
	var res struct {
		Ran           bool
		RunID, Reason string
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RAN\tRUN ID\tREASON")
	fmt.Fprintf(tw, "%v\t%s\t%s\n", res.Ran, dash(res.RunID), dash(res.Reason))
	return tw.Flush()
}

// printCronRuns prints cron.runs' entries, newest as the gateway orders them.
func printCronRuns(w io.Writer, raw json.RawMessage) error {
	var res struct {
		Entries []struct {
			RunID, Status, Error string
			RunAtMs              int64
			DurationMs           *int64
		}
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return err
	}
	if len(res.Entries) == 0 {
		_, err := fmt.Fprintln(w, "No runs.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN ID\tSTATUS\tSTARTED\tDURATION\tERROR")
	for _, e := range res.Entries {
		dur := "-"
		if e.DurationMs != nil {
			dur = (time.Duration(*e.DurationMs) * time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.RunID, e.Status,
			time.UnixMilli(e.RunAtMs).UTC().Format(time.RFC3339), dur, dash(e.Error))
	}
	return tw.Flush()
}

func newCronRunsCmd(g *globalFlags) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use: "runs ID", Short: "Show a job's run history", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			params := map[string]any{"id": args[0]}
			if limit > 0 {
				params["limit"] = limit
			}
			return g.callTable(cmd, "cron.runs", params, printCronRuns)
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "show at most this many runs (0: the gateway's default)")
	return cmd
}

// cronCall calls method and prints its result as JSON.
func (g *globalFlags) cronCall(cmd *cobra.Command, method string, params any) error {
	return g.withConn(cmd, func(ctx context.Context, c *conn) error {
		raw, err := g.callRaw(ctx, c, method, params)
		if err != nil {
			return err
		}
		return writeJSON(cmd.OutOrStdout(), raw)
	})
}

func newCronListCmd(g *globalFlags) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use: "list", Short: "List jobs", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withConn(cmd, func(ctx context.Context, c *conn) error {
				raw, err := g.callRaw(ctx, c, "cron.list", map[string]any{"includeDisabled": all})
				if err != nil {
					return err
				}
				if g.json {
					return writeJSON(cmd.OutOrStdout(), raw)
				}
				var res struct{ Jobs []cronRow }
				if err := json.Unmarshal(raw, &res); err != nil {
					return fmt.Errorf("cron.list: %w", err)
				}
				return printCronJobs(cmd.OutOrStdout(), res.Jobs)
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "include disabled jobs")
	return cmd
}

// cronRow is the part of a cron.list job the table shows.
type cronRow struct {
	ID, Name string
	Enabled  bool
	Schedule struct {
		Kind, At, Expr, Tz string
		EveryMs            int64
	}
	State struct{ NextRunAtMs int64 }
}

func printCronJobs(w io.Writer, jobs []cronRow) error {
	if len(jobs) == 0 {
		_, err := fmt.Fprintln(w, "No cron jobs.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tENABLED\tSCHEDULE\tNEXT")
	for _, v := range jobs {
		sched := v.Schedule.Kind
		switch v.Schedule.Kind {
		case "at":
			sched += " " + v.Schedule.At
		case "every":
			sched += " " + shortDuration(time.Duration(v.Schedule.EveryMs)*time.Millisecond)
		case "cron":
			sched += " " + v.Schedule.Expr + " " + v.Schedule.Tz
		}
		next := "-"
		if v.State.NextRunAtMs > 0 {
			next = time.UnixMilli(v.State.NextRunAtMs).UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\n", v.ID, v.Name, v.Enabled, sched, next)
	}
	return tw.Flush()
}

func newCronAddCmd(g *globalFlags) *cobra.Command {
	var (
		name, at, expr, tz, message, event, session string
		every                                       time.Duration
		deleteAfter, disabled                       bool
	)
	cmd := &cobra.Command{
		Use: "add", Short: "Add a job", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sched := map[string]any{}
			n := 0
			if at != "" {
				n++
				sched = map[string]any{"kind": "at", "at": at}
			}
			if every > 0 {
				n++
				// Anchored at now: "every 24h" first runs a day from now,
				// not at the next multiple of 24h since 1970 (midnight UTC).
				sched = map[string]any{"kind": "every", "everyMs": every.Milliseconds(), "anchorMs": time.Now().UnixMilli()}
			}
			if expr != "" {
				n++
				sched = map[string]any{"kind": "cron", "expr": expr, "tz": tz}
			}
			if n != 1 {
				return errors.New("give exactly one of --at, --every, --cron")
			}
			payload := map[string]any{"kind": "agentTurn", "message": message}
			if event != "" {
				payload = map[string]any{"kind": "systemEvent", "text": event}
			}
			return g.callTable(cmd, "cron.add", map[string]any{"name": name, "schedule": sched, "payload": payload,
				"sessionTarget": session, "deleteAfterRun": deleteAfter, "enabled": !disabled}, printCronJob)
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "job name (required)")
	f.StringVar(&at, "at", "", "run once at this RFC 3339 time")
	f.DurationVar(&every, "every", 0, "run every interval (e.g. 10m)")
	f.StringVar(&expr, "cron", "", "cron expression (5 fields)")
	f.StringVar(&tz, "tz", "", "time zone of --cron (IANA name)")
	f.StringVar(&message, "message", "", "agent turn message")
	f.StringVar(&event, "system-event", "", "system event text instead of a message")
	f.StringVar(&session, "session", "isolated", "isolated (cron:<jobId>) or main")
	f.BoolVar(&deleteAfter, "delete-after-run", false, "delete a one-shot job after it ran")
	f.BoolVar(&disabled, "disabled", false, "add the job disabled")
	return cmd
}

// shortDuration is d as time.Duration prints it, without zero trailing
// units: 24h, 1h30m, 10m, 45s.
func shortDuration(d time.Duration) string {
	s := d.String()
	for _, z := range []string{"0s", "0m"} {
		if len(s) > len(z) && strings.HasSuffix(s, z) && s[len(s)-len(z)-1] >= 'a' {
			s = strings.TrimSuffix(s, z)
		}
	}
	return s
}
