package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// spawnTool is the agent tool "sessions spawn" invokes.
const spawnTool = "sessions_spawn"

// spawnDetails is the part of the sessions_spawn result the CLI reads.
type spawnDetails struct {
	Status          string `json:"status"` // accepted|forbidden|error
	Error           string `json:"error"`
	ChildSessionKey string `json:"childSessionKey"`
	RunID           string `json:"runId"`
}

// spawnArgs takes the one TASK. Two arguments most likely put the
// requester's session first, as `sessions send KEY MESSAGE` does: the
// error says that the requester is --session.
func spawnArgs(cmd *cobra.Command, args []string) error {
	switch {
	case len(args) == 2:
		return fmt.Errorf("spawn takes one argument, the task; the requester session is --session (default main): switchboard sessions spawn --session %s %q", args[0], args[1])
	case len(args) != 1:
		return fmt.Errorf("spawn takes one argument, the task (\"-\" reads it from stdin); got %d", len(args))
	}
	return nil
}

func newSessionsSpawnCmd(g *globalFlags) *cobra.Command {
	var (
		session, agentID, label string
		noWait, wait            bool
	)
	cmd := &cobra.Command{
		Use:   "spawn TASK|-",
		Short: "Spawn a sub-agent run and follow it to its result",
		Long: `Spawn starts a sub-agent with TASK ("-" reads it from stdin) through the
sessions_spawn tool, on behalf of the requester session --session (default
main), which receives the completion announce. It prints the child session
and run id.

Unless --no-wait is given it then streams the child's reply as the model
writes it, and once the run ends prints its status and result (the child's
last reply). It exits 1 when the spawn is refused, the child fails or is
aborted, or --timeout (default 10m here) passes first; the child keeps
running on the gateway in that last case. With --json it prints the
tools.invoke result (--no-wait), or the spawn details, the child run's
agent.wait status and its result as one object.`,
		Example: `  switchboard sessions spawn "summarise the open issues"
  switchboard sessions spawn --agent research --label scan "list the new papers" --no-wait`,
		Args: spawnArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			task := args[0]
			if task == "-" {
				b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), maxParamsBytes))
				if err != nil {
					return fmt.Errorf("task: read stdin: %w", err)
				}
				task = string(b)
			}
			if strings.TrimSpace(task) == "" {
				return errors.New("task is empty")
			}
			g.resolve(cmd)
			if !noWait && !cmd.Flags().Changed("timeout") {
				g.timeout = DefaultWaitTimeout
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), g.timeout)
			defer cancel()
			// The child's events may arrive before the spawn's answer: when
			// waiting, they stay buffered on the connection until read.
			c, err := g.dial(ctx, noWait)
			if err != nil {
				return err
			}
			defer func() { c.Close() }()

			toolArgs := map[string]any{"task": task}
			if label != "" {
				toolArgs["label"] = label
			}
			if agentID != "" {
				toolArgs["agentId"] = agentID
			}
			raw, err := g.callRaw(ctx, c, wire.MethodToolsInvoke, wire.ToolsInvokeParams{
				Tool: spawnTool, Args: mustMarshal(toolArgs), SessionKey: session,
			})
			if err != nil {
				return err
			}
			var res wire.ToolsInvokeResult
			if err := decodeResult(wire.MethodToolsInvoke, raw, &res); err != nil {
				return err
			}
			spawn, err := decodeSpawn(&res)
			out := cmd.OutOrStdout()
			if g.json && (noWait || err != nil) {
				if werr := writeJSON(out, raw); werr != nil {
					return werr
				}
			}
			if err != nil {
				return err
			}
			if !g.json {
				fmt.Fprintf(out, "Child session: %s\nRun ID:        %s\n", spawn.ChildSessionKey, spawn.RunID)
			}
			if noWait {
				return nil
			}
			f := &childFollower{
				runWaiter: runWaiter{g: g, key: spawn.ChildSessionKey, runID: spawn.RunID, stdout: out},
			}
			f.out = &prefixWriter{w: out, prefix: "child " + spawn.ChildSessionKey + ": "}
			if g.json {
				f.out = io.Discard
			}
			return f.follow(ctx, &c, res.Details)
		},
	}
	f := cmd.Flags()
	f.StringVar(&session, "session", "main", "requester session KEY the child reports back to")
	f.StringVar(&agentID, "agent", "", "agent ID to run the child as (default the requester's agent)")
	f.StringVar(&label, "label", "", "label of the child session")
	f.BoolVar(&noWait, "no-wait", false, "print the child's session and run id and return at once")
	// sessions send waits with --wait; spawn waits unless told not to, and
	// takes --wait too rather than refuse the flag a user of send types.
	f.BoolVar(&wait, "wait", false, "follow the child to its result (the default)")
	cmd.MarkFlagsMutuallyExclusive("wait", "no-wait")
	return cmd
}

// decodeSpawn reads the sessions_spawn result and turns a refused spawn
// into an error.
func decodeSpawn(res *wire.ToolsInvokeResult) (*spawnDetails, error) {
	if res.Error != nil {
		// The gateway did not run the tool (not available, bad target).
		return nil, fmt.Errorf("%s: %s", spawnTool, res.Error.Message)
	}
	var d spawnDetails
	if err := json.Unmarshal(res.Details, &d); err != nil {
		return nil, fmt.Errorf("%s: decode result: %w", spawnTool, err)
	}
	if d.Status == "accepted" && !res.IsError {
		if d.ChildSessionKey == "" || d.RunID == "" {
			return nil, fmt.Errorf("%s: accepted without a child session and run id", spawnTool)
		}
		return &d, nil
	}
	msg := d.Error
	if msg == "" && len(res.Content) > 0 {
		msg = res.Content[0].Text
	}
	return nil, fmt.Errorf("%s %s: %s", spawnTool, orDash(d.Status), orDash(oneLine(msg)))
}

// childFollower streams a spawned child's run, then prints its status and
// result.
type childFollower struct {
	runWaiter
}

// follow waits for the child run as runWaiter.wait does, then prints its
// final status and result (--json: spawn details, agent.wait status and
// result as one object). *c may be replaced by a new connection.
func (f *childFollower) follow(ctx context.Context, c **conn, spawn json.RawMessage) error {
	out, err := f.stream(ctx, (*c).Events())
	(*c).drain()
	if missed, ok := errors.AsType[*errMissed](err); ok {
		if missed.connLost {
			(*c).Close()
			nc, err := f.g.dial(ctx, true)
			if err != nil {
				f.endLine()
				return err
			}
			*c = nc
		}
		out, err = f.recover(ctx, *c)
	}
	f.endLine()
	if err != nil {
		return err
	}
	status := out.status
	if status == nil {
		ms := int64(10_000) // the run has ended: agent.wait answers at once
		if status, err = f.g.callRaw(ctx, *c, wire.MethodAgentWait, wire.AgentWaitParams{RunID: f.runID, TimeoutMs: &ms}); err != nil {
			return err
		}
	}
	var res wire.AgentWaitResult
	if err := decodeResult(wire.MethodAgentWait, status, &res); err != nil {
		return err
	}
	result, err := f.result(ctx, *c)
	if err != nil {
		return err
	}
	if result == "" {
		result = out.text
	}
	line, failed := waitOutcome(&res, f.g.timeout)
	if failed != nil && line != "" {
		failed = fmt.Errorf("child %w", failed) // "child run <id> failed: …"
	}
	if f.g.json {
		text, _ := json.Marshal(result)
		if err := writeJSON(f.stdout, map[string]json.RawMessage{"spawn": spawn, "status": status, "result": text}); err != nil {
			return err
		}
		return failed
	}
	if line == "" {
		return failed // the wait, not the run, ended
	}
	fmt.Fprintf(f.stdout, "Status: %s\n", strings.TrimPrefix(line, "run "+f.runID+": "))
	if result != "" {
		fmt.Fprintf(f.stdout, "Result: %s\n", indentRest(strings.TrimRight(result, "\n")))
	}
	return failed
}

// result is the child's last assistant text in chat.history: the child
// run's own reply when there is one, else the session's latest.
func (f *childFollower) result(ctx context.Context, c caller) (string, error) {
	var hist wire.ChatHistoryResult
	limit := historyScan
	if err := f.g.call(ctx, c, wire.MethodChatHistory, wire.ChatHistoryParams{SessionKey: f.key, Limit: &limit}, &hist); err != nil {
		return "", err
	}
	return lastAssistantText(hist.Messages, f.runID), nil
}

// lastAssistantText returns the text of the last assistant message of run
// runID with text, else of the last assistant message with text.
func lastAssistantText(msgs []json.RawMessage, runID string) string {
	latest := ""
	for i := len(msgs) - 1; i >= 0; i-- {
		m, err := decodeMessage(msgs[i])
		if err != nil || m.Role != "assistant" {
			continue
		}
		text := m.text()
		if strings.TrimSpace(text) == "" {
			continue
		}
		if m.Meta.RunID == runID {
			return text
		}
		if latest == "" {
			latest = text
		}
	}
	return latest
}

// indentRest indents every line of s but the first by two spaces, leaving
// blank lines empty.
func indentRest(s string) string {
	lines := strings.Split(s, "\n")
	for i := 1; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "" {
			lines[i] = "  " + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

// prefixWriter writes prefix once, before the first bytes written to it.
type prefixWriter struct {
	w       io.Writer
	prefix  string
	started bool
}

// Write writes the prefix the first time, then p.
func (p *prefixWriter) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if !p.started {
		p.started = true
		if _, err := io.WriteString(p.w, p.prefix); err != nil {
			return 0, err
		}
	}
	return p.w.Write(b)
}

// mustMarshal encodes v, which must be encodable.
func mustMarshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("cli: encode: " + err.Error())
	}
	return b
}
