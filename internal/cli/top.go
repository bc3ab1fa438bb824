package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// ANSI sequences of the live view: cursor home and clear screen.
const ansiClear = "\x1b[H\x1b[2J"

// topRunRows bounds the runs listed in one frame (the header counts all).
const topRunRows = 30

// topTreeRows bounds the session trees listed in one frame.
const topTreeRows = 20

func newTopCmd(g *globalFlags) *cobra.Command {
	var once bool
	var interval time.Duration
	var limit int
	cmd := &cobra.Command{
		Use:   "top",
		Short: "Live view of running and queued runs, lanes and cost per session tree",
		Long: `Top shows what the gateway is doing, refreshed every second until
interrupted: running and queued runs, each lane with its queue depth, and
tokens and cost per session tree (a root session and every session it
spawned, through spawnedBy). Data comes from runs.active.

--once prints one frame without screen control (for scripts); with --json
it prints runs.active's result.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if interval < 100*time.Millisecond {
				return fmt.Errorf("--interval %s is too short (at least 100ms)", interval)
			}
			if limit < 1 || limit > 1000 {
				return fmt.Errorf("--limit %d is out of range (1..1000)", limit)
			}
			if g.json && !once {
				return fmt.Errorf("--json needs --once")
			}
			g.resolve(cmd)
			dctx, cancel := context.WithTimeout(cmd.Context(), g.timeout)
			c, err := g.dial(dctx, true)
			cancel()
			if err != nil {
				return err
			}
			defer c.Close()
			out := cmd.OutOrStdout()
			for {
				cctx, cancel := context.WithTimeout(cmd.Context(), g.timeout)
				raw, err := g.callRaw(cctx, c, wire.MethodRunsActive, map[string]any{"limit": limit})
				cancel()
				if err != nil {
					if !once && cmd.Context().Err() != nil {
						return nil // interrupted
					}
					return err
				}
				if once && g.json {
					return writeJSON(out, raw)
				}
				var res wire.RunsActiveResult
				if err := decodeResult(wire.MethodRunsActive, raw, &res); err != nil {
					return err
				}
				var frame strings.Builder
				if !once {
					frame.WriteString(ansiClear)
				}
				renderTop(&frame, &res, g.url)
				if _, err := io.WriteString(out, frame.String()); err != nil {
					return err
				}
				if once {
					return nil
				}
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(interval):
				}
			}
		},
	}
	cmd.Flags().BoolVar(&once, "once", false, "print one frame and exit")
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "refresh interval of the live view")
	cmd.Flags().IntVar(&limit, "limit", 50, "recently updated sessions to include (1..1000)")
	return cmd
}

// laneStat is one lane's running and queued runs.
type laneStat struct {
	lane            string
	running, queued int
}

// sessionTree is a root session and its spawned descendants.
type sessionTree struct {
	root                  string
	sessions              int
	running, queued       int
	input, output, tokens int64
	cost                  float64
	updated               int64
}

// topLanes counts the runs per lane, busiest first.
func topLanes(runs []wire.ActiveRun) []laneStat {
	by := map[string]*laneStat{}
	for _, r := range runs {
		l := by[r.Lane]
		if l == nil {
			l = &laneStat{lane: r.Lane}
			by[r.Lane] = l
		}
		if r.Status == "running" {
			l.running++
		} else {
			l.queued++
		}
	}
	out := make([]laneStat, 0, len(by))
	for _, l := range by {
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b laneStat) int {
		return cmp.Or(cmp.Compare(b.running+b.queued, a.running+a.queued), cmp.Compare(a.lane, b.lane))
	})
	return out
}

// treeRoot follows spawnedBy up to the first session whose parent is not
// listed (a cycle stops where it closes).
func treeRoot(key string, parent map[string]string) string {
	seen := map[string]bool{}
	for !seen[key] {
		seen[key] = true
		p, ok := parent[key]
		if !ok || p == "" {
			return key
		}
		if _, listed := parent[p]; !listed {
			return key
		}
		key = p
	}
	return key
}

// topTrees sums sessions and runs per session tree: active trees first,
// then the most recently updated.
func topTrees(res *wire.RunsActiveResult) []sessionTree {
	parent := make(map[string]string, len(res.Sessions))
	for _, s := range res.Sessions {
		parent[s.Key] = s.SpawnedBy
	}
	by := map[string]*sessionTree{}
	tree := func(key string) *sessionTree {
		root := treeRoot(key, parent)
		t := by[root]
		if t == nil {
			t = &sessionTree{root: root}
			by[root] = t
		}
		return t
	}
	for _, s := range res.Sessions {
		t := tree(s.Key)
		t.sessions++
		t.input += s.InputTokens
		t.output += s.OutputTokens
		t.tokens += s.TotalTokens
		t.cost += s.Cost
		t.updated = max(t.updated, s.UpdatedAt)
	}
	for _, r := range res.Runs {
		t := tree(r.SessionKey)
		if r.Status == "running" {
			t.running++
		} else {
			t.queued++
		}
	}
	out := make([]sessionTree, 0, len(by))
	for _, t := range by {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b sessionTree) int {
		return cmp.Or(cmp.Compare(b.running+b.queued, a.running+a.queued), cmp.Compare(b.updated, a.updated), cmp.Compare(a.root, b.root))
	})
	return out
}

// renderTop writes one frame of the view.
func renderTop(w *strings.Builder, res *wire.RunsActiveResult, gatewayURL string) {
	now := time.UnixMilli(res.TS)
	running := 0
	for _, r := range res.Runs {
		if r.Status == "running" {
			running++
		}
	}
	fmt.Fprintf(w, "switchboard top  %s  %s\n", gatewayURL, now.UTC().Format("2006-01-02 15:04:05 UTC"))
	fmt.Fprintf(w, "runs: %d running, %d queued\n\n", running, len(res.Runs)-running)

	lanes := topLanes(res.Runs)
	lw := 20 // text columns as wide as their longest value: long keys stay aligned
	for _, l := range lanes {
		lw = max(lw, len(l.lane))
	}
	fmt.Fprintf(w, "LANES\n  %-*s %8s %8s\n", lw, "LANE", "RUNNING", "QUEUED")
	if len(lanes) == 0 {
		w.WriteString("  (idle)\n")
	}
	for _, l := range lanes {
		fmt.Fprintf(w, "  %-*s %8d %8d\n", lw, l.lane, l.running, l.queued)
	}

	runs := slices.Clone(res.Runs)
	slices.SortStableFunc(runs, func(a, b wire.ActiveRun) int {
		return cmp.Or(cmp.Compare(statusRank(a.Status), statusRank(b.Status)), cmp.Compare(a.CreatedAt, b.CreatedAt))
	})
	laneW, keyW := 12, 40
	for _, r := range runs[:min(len(runs), topRunRows)] {
		laneW, keyW = max(laneW, len(r.Lane)), max(keyW, len(r.SessionKey))
	}
	fmt.Fprintf(w, "\nRUNS\n  %-8s %7s  %-*s %-*s %s\n", "STATUS", "AGE", laneW, "LANE", keyW, "SESSION", "RUN")
	if len(runs) == 0 {
		w.WriteString("  (none)\n")
	}
	for i, r := range runs {
		if i == topRunRows {
			fmt.Fprintf(w, "  ... %d more\n", len(runs)-topRunRows)
			break
		}
		since := r.CreatedAt
		if r.StartedAt != 0 {
			since = r.StartedAt
		}
		fmt.Fprintf(w, "  %-8s %7s  %-*s %-*s %s\n", r.Status, shortAge(now.Sub(time.UnixMilli(since))), laneW, r.Lane, keyW, r.SessionKey, r.RunID)
	}

	trees := topTrees(res)
	rootW := 40
	for _, t := range trees[:min(len(trees), topTreeRows)] {
		rootW = max(rootW, len(t.root))
	}
	fmt.Fprintf(w, "\nSESSION TREES\n  %-*s %8s %7s %7s %10s %10s %10s %10s\n", rootW, "ROOT", "SESSIONS", "RUNNING", "QUEUED", "IN", "OUT", "TOKENS", "COST")
	if len(trees) == 0 {
		w.WriteString("  (none)\n")
	}
	for i, t := range trees {
		if i == topTreeRows {
			fmt.Fprintf(w, "  ... %d more\n", len(trees)-topTreeRows)
			break
		}
		fmt.Fprintf(w, "  %-*s %8d %7d %7d %10d %10d %10d %10s\n", rootW, t.root, t.sessions, t.running, t.queued, t.input, t.output, t.tokens, fmt.Sprintf("$%.4f", t.cost))
	}
}

func statusRank(s string) int {
	if s == "running" {
		return 0
	}
	return 1
}

// shortAge is d as "42s", "3m05s" or "2h10m".
func shortAge(d time.Duration) string {
	d = max(d, 0).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
