package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/logfile"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/statedir"
)

// logsTailResult is logs.tail's result.
type logsTailResult struct {
	File         string   `json:"file"`
	Cursor       int64    `json:"cursor"`
	Size         int64    `json:"size"`
	Lines        []string `json:"lines"`
	Truncated    bool     `json:"truncated"`
	Reset        bool     `json:"reset"`
	SkippedBytes int64    `json:"skippedBytes"`
}

func newLogsCmd(g *globalFlags) *cobra.Command {
	var follow bool
	var limit, maxBytes int
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "logs",
		Short: "Print the gateway's log file (logs.tail); -f follows it",
		Long: "Prints the end of the gateway's log file, read through the gateway (logs.tail);\n" +
			"when no gateway runs on the state dir (and no --url names one), the file itself.\n" +
			"Lines are shown as time, level, message and fields; --json prints the JSON lines as written.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g.resolve(cmd)
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			var read func(ctx context.Context, params map[string]any, cursor *int64) (logsTailResult, error)
			if file, dir, ok := g.localLogFile(cmd); ok {
				// No gateway runs on this state dir (it stopped, or never
				// started): its log file says why, so read it here.
				if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
					fmt.Fprintf(errOut, "logs: no gateway is running on %s, and it has no log file yet (%s); `switchboard serve` prints why it does not start\n", dir, file)
				} else {
					fmt.Fprintf(errOut, "logs: no gateway is running on %s; reading %s\n", dir, file)
				}
				read = func(_ context.Context, _ map[string]any, cursor *int64) (logsTailResult, error) {
					return tailLocal(file, cursor, limit, maxBytes)
				}
			} else {
				dctx, cancel := context.WithTimeout(cmd.Context(), g.timeout)
				c, err := g.dial(dctx, true)
				cancel()
				if err != nil {
					return err
				}
				defer c.Close()
				read = func(ctx context.Context, params map[string]any, _ *int64) (logsTailResult, error) {
					var res logsTailResult
					err := g.call(ctx, c, wire.MethodLogsTail, params, &res)
					return res, err
				}
			}
			var cursor *int64
			for {
				params := map[string]any{"limit": limit, "maxBytes": maxBytes}
				if cursor != nil {
					params["cursor"] = *cursor
				}
				cctx, cancel := context.WithTimeout(cmd.Context(), g.timeout)
				res, err := read(cctx, params, cursor)
				cancel()
				if err != nil {
					if cmd.Context().Err() != nil {
						return nil // interrupted while following
					}
					return err
				}
				switch {
				case cursor != nil && res.SkippedBytes > 0:
					fmt.Fprintf(errOut, "logs: fell behind, %d bytes skipped\n", res.SkippedBytes)
				case cursor != nil && res.Reset:
					fmt.Fprintln(errOut, "logs: the log file was rotated; reading the new one")
				case cursor == nil && res.Truncated:
					fmt.Fprintf(errOut, "logs: showing the end of %s\n", res.File)
				}
				for _, l := range res.Lines {
					if g.json {
						fmt.Fprintln(out, l)
					} else {
						fmt.Fprintln(out, formatLogLine(l))
					}
				}
				if !follow {
					return nil
				}
				next := res.Cursor
				cursor = &next
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(interval):
				}
			}
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines until interrupted")
	cmd.Flags().IntVar(&limit, "limit", 200, "at most this many lines per read (1..5000)")
	cmd.Flags().IntVar(&maxBytes, "max-bytes", 250000, "at most this many bytes per read (1..1000000)")
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "how often to read while following")
	return cmd
}

// localLogFile returns the log file of the state dir's gateway, and the
// state dir, when no gateway runs on it and no --url or SWITCHBOARD_URL
// names one elsewhere: then the file is read directly, not through
// logs.tail.
func (g *globalFlags) localLogFile(cmd *cobra.Command) (file, dir string, ok bool) {
	paths, ok := g.noLocalGateway(cmd)
	if !ok {
		return "", "", false
	}
	file = filepath.Join(paths.StateDir, "logs", "switchboard.log")
	if set, _, err := settings.Load(paths.ConfigPath, g.env); err == nil && set.Log.File != "" {
		file = set.Log.File
	}
	return file, paths.StateDir, true
}

// noLocalGateway returns the state dir's paths when the CLI talks to the
// gateway of this state dir (no --url or SWITCHBOARD_URL) and none runs
// on it.
func (g *globalFlags) noLocalGateway(cmd *cobra.Command) (settings.Paths, bool) {
	if cmd.Flags().Changed("url") || strings.TrimSpace(g.env(EnvURL)) != "" {
		return settings.Paths{}, false
	}
	paths, err := settings.ResolvePaths(g.env)
	if err != nil {
		return settings.Paths{}, false
	}
	if _, running, err := statedir.Running(paths.StateDir); err != nil || running {
		return settings.Paths{}, false
	}
	return paths, true
}

// tailLocal reads the log file at path as logs.tail would.
func tailLocal(path string, cursor *int64, limit, maxBytes int) (logsTailResult, error) {
	if limit < 1 || limit > logfile.MaxTailLimit {
		return logsTailResult{}, fmt.Errorf("--limit must be 1..%d", logfile.MaxTailLimit)
	}
	if maxBytes < 1 || maxBytes > logfile.MaxTailMaxBytes {
		return logsTailResult{}, fmt.Errorf("--max-bytes must be 1..%d", logfile.MaxTailMaxBytes)
	}
	r, err := logfile.Tail(path, logfile.TailParams{Cursor: cursor, Limit: limit, MaxBytes: maxBytes})
	if err != nil {
		return logsTailResult{}, err
	}
	res := logsTailResult{File: r.File, Cursor: r.Cursor, Size: r.Size, Lines: r.Lines, Truncated: r.Truncated, Reset: r.Reset}
	if r.SkippedBytes != nil {
		res.SkippedBytes = *r.SkippedBytes
	}
	return res, nil
}

// formatLogLine renders one JSON log line as "time LEVEL message k=v ...";
// a line that is not a JSON object is returned as it is.
func formatLogLine(line string) string {
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return line
	}
	var b bytes.Buffer
	if ts, ok := m["time"].(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
			ts = t.Local().Format("2006-01-02 15:04:05.000")
		}
		b.WriteString(ts)
		b.WriteByte(' ')
	}
	if lv, ok := m["level"].(string); ok {
		fmt.Fprintf(&b, "%-5s ", lv)
	}
	msgKey := "message" // the log file's key; "msg" is slog's default
	if _, ok := m[msgKey].(string); !ok {
		msgKey = "msg"
	}
	if msg, ok := m[msgKey].(string); ok {
		b.WriteString(msg)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if k != "time" && k != "level" && k != msgKey {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		var s string
		switch v := v.(type) {
		case string:
			s = v
			if strings.ContainsAny(s, " \t\"=") || s == "" {
				q, _ := json.Marshal(s)
				s = string(q)
			}
		default:
			q, _ := json.Marshal(v)
			s = string(q)
		}
		fmt.Fprintf(&b, " %s=%s", k, s)
	}
	return b.String()
}
