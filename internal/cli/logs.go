package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
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
		Long: "Prints the end of the gateway's log file, read through the gateway (logs.tail).\n" +
			"Lines are shown as time, level, message and fields; --json prints the JSON lines as written.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g.resolve(cmd)
			dctx, cancel := context.WithTimeout(cmd.Context(), g.timeout)
			c, err := g.dial(dctx, true)
			cancel()
			if err != nil {
				return err
			}
			defer c.Close()
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			var cursor *int64
			for {
				params := map[string]any{"limit": limit, "maxBytes": maxBytes}
				if cursor != nil {
					params["cursor"] = *cursor
				}
				cctx, cancel := context.WithTimeout(cmd.Context(), g.timeout)
				var res logsTailResult
				err := g.call(cctx, c, wire.MethodLogsTail, params, &res)
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
