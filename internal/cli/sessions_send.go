package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// DefaultWaitTimeout bounds "sessions send --wait" when --timeout is not
// given: a run with tools takes longer than one call.
const DefaultWaitTimeout = 10 * time.Minute

// historyScan is how many recent messages are searched for a run's reply
// when its events were missed.
const historyScan = 100

func newSessionsSendCmd(g *globalFlags) *cobra.Command {
	var (
		wait bool
		idem string
	)
	cmd := &cobra.Command{
		Use:   "send KEY MESSAGE|-",
		Short: "Send a message to a session and optionally wait for the reply",
		Long: `Send starts an agent run in session KEY with MESSAGE ("-" reads it from
stdin) and prints the run id.

With --wait it streams the reply to stdout as the model writes it and exits
0 when the run finishes, or 1 when it fails, is aborted, or --timeout (default
10m with --wait) passes first; the run itself keeps going on the gateway. With
--json --wait it prints the run's final status and reply as JSON instead.`,
		Example: `  switchboard sessions send main "summarise the open tasks" --wait
  switchboard sessions send agent:main:main "hello" --json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			msg := args[1]
			if msg == "-" {
				b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), maxParamsBytes))
				if err != nil {
					return fmt.Errorf("message: read stdin: %w", err)
				}
				msg = string(b)
			}
			if strings.TrimSpace(msg) == "" {
				return errors.New("message is empty")
			}
			if idem == "" {
				idem = uuid.NewString()
			}
			g.resolve(cmd)
			if wait && !cmd.Flags().Changed("timeout") {
				g.timeout = DefaultWaitTimeout
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), g.timeout)
			defer cancel()
			// Without --wait nothing reads events, so they are drained.
			c, err := g.dial(ctx, !wait)
			if err != nil {
				return err
			}
			defer func() { c.Close() }()

			p := wire.ChatSendParams{SessionKey: args[0], Message: msg, IdempotencyKey: idem}
			raw, err := g.callRaw(ctx, c, wire.MethodChatSend, p)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !wait && g.json {
				return writeJSON(out, raw)
			}
			var res wire.ChatSendResult
			if err := decodeResult(wire.MethodChatSend, raw, &res); err != nil {
				return err
			}
			if !wait {
				_, err := fmt.Fprintln(out, res.RunID)
				return err
			}
			w := &runWaiter{g: g, key: args[0], runID: res.RunID, out: out, stdout: out}
			if errOut := cmd.ErrOrStderr(); g.isTerminal(errOut) {
				w.prog = &progress{w: errOut, start: time.Now(), now: time.Now, before: w.endLine}
				if pos := queuePosition(ctx, c, args[0], res.RunID); pos > 0 {
					w.prog.line("queued as run %s (position %d: waiting for the session's current run)", res.RunID, pos)
				} else {
					w.prog.line("queued as run %s", res.RunID)
				}
			}
			if g.json {
				w.out = io.Discard
			}
			return w.wait(ctx, &c, res.Status)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&wait, "wait", false, "wait for the reply and print it as it streams")
	f.StringVar(&idem, "idempotency-key", "", "reuse this key to make a retried send start no second run (default random)")
	return cmd
}

// runWaiter follows one run to its end, writing the reply text to out as
// chat delta events bring it.
type runWaiter struct {
	g     *globalFlags
	key   string
	runID string
	// out receives the reply text as it streams (io.Discard with --json);
	// stdout the --json status.
	out, stdout io.Writer

	turn    string // text of the current model turn written so far
	printed bool   // whether any text was written
	lastNL  bool   // whether the last byte written was '\n'
	lastSeq int64  // seq of the last event frame seen

	prog *progress // stages on stderr; nil when off
}

// commandReply tells a command the gateway answered itself from a run: no
// run has the send's id. It returns the reply the gateway filed under that
// id ("" when it posted none).
func (w *runWaiter) commandReply(ctx context.Context, c caller) (string, bool, error) {
	ms := int64(1)
	raw, err := c.CallRaw(ctx, wire.MethodAgentWait, wire.AgentWaitParams{RunID: w.runID, TimeoutMs: &ms})
	if err != nil {
		return "", false, w.g.callError(ctx, wire.MethodAgentWait, err)
	}
	var res wire.AgentWaitResult
	if err := decodeResult(wire.MethodAgentWait, raw, &res); err != nil {
		return "", false, err
	}
	if res.Status != "timeout" || res.EndedAt != 0 || res.StartedAt != 0 {
		return "", false, nil // a run: the normal path reports it
	}
	var hist wire.ChatHistoryResult
	limit := historyScan
	if err := w.g.call(ctx, c, wire.MethodChatHistory, wire.ChatHistoryParams{SessionKey: w.key, Limit: &limit}, &hist); err != nil {
		return "", false, err
	}
	for i := len(hist.Messages) - 1; i >= 0; i-- {
		m, err := decodeMessage(hist.Messages[i])
		if err == nil && m.Role == "assistant" && m.Meta.RunID == w.runID {
			return m.text(), true, nil
		}
	}
	return "", true, nil
}

// runOutcome is how a run ended.
type runOutcome struct {
	state  string // wire.ChatStateFinal, ChatStateError or ChatStateAborted
	errMsg string
	text   string          // the final assistant text
	status json.RawMessage // the agent.wait result, when already fetched
	usage  json.RawMessage // the final chat event's usage, when streamed
	ended  bool            // whether the run's end was seen (for the stage line)
}

// errMissed reports that the event stream can no longer be trusted.
type errMissed struct{ connLost bool }

// Error describes the miss.
func (e *errMissed) Error() string { return "missed run events" }

// wait streams the run's reply and reports how it ended. *c may be
// replaced by a new connection when the first one is lost.
func (w *runWaiter) wait(ctx context.Context, c **conn, sendStatus string) error {
	var (
		out runOutcome
		err error
	)
	switch sendStatus {
	case "started", "in_flight":
		out, err = w.stream(ctx, (*c).Events())
	case "ok":
		// Either a repeated key of a run that ended ok, or a command the
		// gateway handled itself (/compact, /new, /queue …): no run, only
		// a reply filed under the send's run id.
		if reply, isCommand, cerr := w.commandReply(ctx, *c); cerr != nil {
			(*c).drain()
			w.endLine()
			return cerr
		} else if isCommand {
			(*c).drain()
			w.finish(reply)
			return nil
		}
		err = &errMissed{}
	default:
		// A repeated idempotency key of a run that already ended: no
		// events will come.
		err = &errMissed{}
	}
	// From here on nothing reads events: discard them so that the
	// client's reader never blocks on a full buffer.
	(*c).drain()
	if missed, ok := errors.AsType[*errMissed](err); ok {
		if missed.connLost {
			(*c).Close()
			nc, err := w.g.dial(ctx, true)
			if err != nil {
				w.endLine()
				return err
			}
			*c = nc
		}
		out, err = w.recover(ctx, *c)
	}
	if err != nil {
		w.endLine()
		return err
	}
	w.finish(out.text)
	if out.ended {
		// After the reply's last line, not inside it.
		w.prog.done(out.state, out.usage)
	}
	if w.g.json {
		if err := w.printStatus(ctx, *c, out); err != nil {
			return err
		}
	}
	switch out.state {
	case wire.ChatStateAborted:
		return fmt.Errorf("run %s was aborted", w.runID)
	case wire.ChatStateError:
		return fmt.Errorf("run %s failed: %s", w.runID, orDash(oneLine(out.errMsg)))
	}
	return nil
}

// stream reads events until the run's final, error or aborted chat event.
func (w *runWaiter) stream(ctx context.Context, events <-chan client.Event) (runOutcome, error) {
	for {
		select {
		case <-ctx.Done():
			return runOutcome{}, w.ctxError(ctx)
		case ev, ok := <-events:
			if !ok {
				return runOutcome{}, &errMissed{connLost: true}
			}
			if ev.Seq > 0 {
				gap := w.lastSeq > 0 && ev.Seq != w.lastSeq+1
				w.lastSeq = ev.Seq
				if gap {
					return runOutcome{}, &errMissed{}
				}
			}
			if ev.Event == wire.EventAgent && w.prog != nil {
				var ae wire.AgentEvent
				if json.Unmarshal(ev.Payload, &ae) == nil && ae.RunID == w.runID {
					w.prog.event(&ae)
				}
				continue
			}
			if ev.Event != wire.EventChat {
				continue
			}
			var ce wire.ChatEvent
			if json.Unmarshal(ev.Payload, &ce) != nil || ce.RunID != w.runID {
				continue
			}
			switch ce.State {
			case wire.ChatStateDelta:
				w.delta(&ce)
			case wire.ChatStateFinal, wire.ChatStateAborted:
				return runOutcome{state: ce.State, text: messageText(ce.Message), errMsg: ce.ErrorMessage,
					usage: ce.Usage, ended: true}, nil
			case wire.ChatStateError:
				msg := ce.ErrorMessage
				if msg == "" {
					msg = ce.ErrorKind
				}
				return runOutcome{state: ce.State, text: messageText(ce.Message), errMsg: msg, ended: true}, nil
			}
		}
	}
}

// delta writes the new text of a chat delta event.
func (w *runWaiter) delta(ce *wire.ChatEvent) {
	if len(ce.Message) == 0 {
		w.write(ce.DeltaText)
		return
	}
	soFar := messageText(ce.Message)
	switch {
	case soFar == w.turn+ce.DeltaText:
		w.write(ce.DeltaText)
	case strings.HasPrefix(soFar, w.turn):
		// Deltas were missed (for example when following a run that
		// had started): catch up from the message so far.
		w.write(soFar[len(w.turn):])
	default:
		// A new model turn after tool calls, or replaced text.
		w.newTurn()
		w.write(soFar)
	}
}

// recover finds out how the run ended with agent.wait and reads its reply
// from chat.history, for when events were missed.
func (w *runWaiter) recover(ctx context.Context, c caller) (runOutcome, error) {
	ms := int64(30_000)
	if dl, ok := ctx.Deadline(); ok {
		ms = max(time.Until(dl).Milliseconds(), 1)
	}
	raw, err := c.CallRaw(ctx, wire.MethodAgentWait, wire.AgentWaitParams{RunID: w.runID, TimeoutMs: &ms})
	if ctx.Err() != nil {
		return runOutcome{}, w.ctxError(ctx)
	}
	if err != nil {
		return runOutcome{}, w.g.callError(ctx, wire.MethodAgentWait, err)
	}
	var res wire.AgentWaitResult
	if err := decodeResult(wire.MethodAgentWait, raw, &res); err != nil {
		return runOutcome{}, err
	}
	out := runOutcome{status: raw}
	switch {
	case res.Status == "ok":
		out.state = wire.ChatStateFinal
	case res.Status == "timeout" && res.EndedAt == 0:
		// The wait ended, not the run.
		return runOutcome{}, w.timeoutError()
	case res.Error == "aborted":
		out.state = wire.ChatStateAborted
	default:
		out.state, out.errMsg = wire.ChatStateError, res.Error
	}
	var hist wire.ChatHistoryResult
	limit := historyScan
	if err := w.g.call(ctx, c, wire.MethodChatHistory, wire.ChatHistoryParams{SessionKey: w.key, Limit: &limit}, &hist); err != nil {
		return runOutcome{}, err
	}
	for i := len(hist.Messages) - 1; i >= 0; i-- {
		m, err := decodeMessage(hist.Messages[i])
		if err == nil && m.Role == "assistant" && m.Meta.RunID == w.runID {
			out.text = m.text()
			break
		}
	}
	return out, nil
}

// printStatus prints the run's agent.wait result with its reply text
// added as "text".
func (w *runWaiter) printStatus(ctx context.Context, c caller, out runOutcome) error {
	raw := out.status
	if raw == nil {
		ms := int64(10_000) // the run has ended: agent.wait answers at once
		var err error
		if raw, err = w.g.callRaw(ctx, c, wire.MethodAgentWait, wire.AgentWaitParams{RunID: w.runID, TimeoutMs: &ms}); err != nil {
			return err
		}
	}
	var obj map[string]json.RawMessage
	if err := decodeResult(wire.MethodAgentWait, raw, &obj); err != nil {
		return err
	}
	text, _ := json.Marshal(out.text)
	obj["text"] = text
	return writeJSON(w.stdout, obj)
}

func (w *runWaiter) ctxError(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return w.timeoutError()
	}
	return fmt.Errorf("%w; run %s keeps running on the gateway", errInterrupted, w.runID)
}

func (w *runWaiter) timeoutError() error {
	return fmt.Errorf("run %s did not finish within %s; it keeps running on the gateway", w.runID, w.g.timeout)
}

// finish writes whatever of the final text was not streamed, then ends the
// line.
func (w *runWaiter) finish(text string) {
	switch {
	case text == "" || text == w.turn:
	case strings.HasPrefix(text, w.turn):
		w.write(text[len(w.turn):])
	default:
		w.newTurn()
		w.write(text)
	}
	w.endLine()
}

func (w *runWaiter) write(s string) {
	if s == "" {
		return
	}
	io.WriteString(w.out, s)
	w.turn += s
	w.printed = true
	w.lastNL = strings.HasSuffix(s, "\n")
}

// newTurn separates the next model turn's text from the previous one.
func (w *runWaiter) newTurn() {
	w.endLine()
	w.turn = ""
}

// endLine ends the current output line, if any text is on it.
func (w *runWaiter) endLine() {
	if w.printed && !w.lastNL {
		io.WriteString(w.out, "\n")
		w.lastNL = true
	}
}

// queuePosition returns where runID waits in its session's queue (1 for
// next), or 0 when it is not waiting (already running, or unknown).
func queuePosition(ctx context.Context, c caller, key, runID string) int {
	limit := 1
	var res wire.ChatHistoryResult
	raw, err := c.CallRaw(ctx, wire.MethodChatHistory, wire.ChatHistoryParams{SessionKey: key, Limit: &limit})
	if err != nil || json.Unmarshal(raw, &res) != nil || res.PendingInputs == nil {
		return 0
	}
	pos := 0
	for _, it := range res.PendingInputs.Items {
		if it.State != "queued" {
			continue
		}
		pos++
		if it.RunID == runID {
			return pos
		}
	}
	return 0
}
