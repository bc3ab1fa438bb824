package shell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/tools"
)

// ProcessToolName is the process tool's wire name.
const ProcessToolName = "process"

// ProcessTool follows the commands exec moved to the background: list,
// poll, log, write, send-keys, submit, paste, kill and clear, over the jobs
// of the calling agent only.
type ProcessTool struct{ jobs *Jobs }

var _ tools.Tool = (*ProcessTool)(nil)

// NewProcessTool returns the process tool over jobs.
func NewProcessTool(jobs *Jobs) *ProcessTool { return &ProcessTool{jobs: jobs} }

var processSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ["list", "poll", "log", "write", "send-keys", "submit", "paste", "kill", "clear", "remove"]},
    "sessionId": {"type": "string", "description": "The session exec returned for a command still running."},
    "timeout": {"type": "number", "minimum": 0, "description": "poll: wait up to this many milliseconds for new output or the exit."},
    "data": {"type": "string", "description": "write: text to send to the command's input."},
    "eof": {"type": "boolean", "description": "write: close the command's input after data."},
    "keys": {"type": "array", "items": {"type": "string"}, "description": "send-keys: key names (Enter, Tab, Escape, Up, Down, Left, Right, Backspace, C-c, C-d, ...) or literal text."},
    "text": {"type": "string", "description": "paste: text to send as is."},
    "offset": {"type": "number", "minimum": 0, "description": "log: first line (0-based)."},
    "limit": {"type": "number", "minimum": 1, "description": "log: number of lines."}
  },
  "required": ["action"]
}`)

// Name implements tools.Tool.
func (*ProcessTool) Name() string { return ProcessToolName }

// Label is the tool's display name.
func (*ProcessTool) Label() string { return "Process" }

// Description implements tools.Tool.
func (*ProcessTool) Description() string {
	return "Manage commands exec moved to the background (it returned status running and a sessionId): " +
		"list them, poll for new output or the exit, read the log, write input, send keys, or kill one."
}

// Schema implements tools.Tool.
func (*ProcessTool) Schema() json.RawMessage { return processSchema }

// ProcessDetails is the process tool's structured result for one session.
type ProcessDetails struct {
	SessionID string `json:"sessionId,omitempty"`
	// Status is "running", "completed", "failed" or "killed".
	Status   string `json:"status,omitempty"`
	ExitCode *int   `json:"exitCode,omitempty"`
	// Sessions is list's answer.
	Sessions []ProcessSession `json:"sessions,omitempty"`
}

// ProcessSession is one row of list.
type ProcessSession struct {
	SessionID string `json:"sessionId"`
	Status    string `json:"status"`
	PID       int    `json:"pid"`
	Command   string `json:"command"`
	StartedAt int64  `json:"startedAt"`
	ExitCode  *int   `json:"exitCode,omitempty"`
}

// keyBytes returns what a terminal sends for a send-keys name (a switch
// rather than a map, so that the package has no init-time work).
func keyBytes(name string) (string, bool) {
	switch name {
	case "enter", "return":
		return "\r", true
	case "tab":
		return "\t", true
	case "escape", "esc":
		return "\x1b", true
	case "space":
		return " ", true
	case "backspace":
		return "\x7f", true
	case "up":
		return "\x1b[A", true
	case "down":
		return "\x1b[B", true
	case "right":
		return "\x1b[C", true
	case "left":
		return "\x1b[D", true
	case "home":
		return "\x1b[H", true
	case "end":
		return "\x1b[F", true
	case "delete":
		return "\x1b[3~", true
	case "pageup":
		return "\x1b[5~", true
	case "pagedown":
		return "\x1b[6~", true
	}
	return "", false
}

// keyInput translates one send-keys entry: a key name, a control chord
// ("C-c"), or literal text.
func keyInput(k string) string {
	if b, ok := keyBytes(strings.ToLower(k)); ok {
		return b
	}
	if len(k) == 3 && (k[:2] == "C-" || k[:2] == "c-") {
		c := k[2] | 0x20 // lower case
		if c >= 'a' && c <= 'z' {
			return string(rune(c - 'a' + 1))
		}
	}
	return k
}

// Call implements tools.Tool.
func (p *ProcessTool) Call(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
	var in struct {
		Action    string   `json:"action"`
		SessionID string   `json:"sessionId"`
		Timeout   *float64 `json:"timeout"`
		Data      *string  `json:"data"`
		EOF       bool     `json:"eof"`
		Keys      []string `json:"keys"`
		Text      *string  `json:"text"`
		Offset    *float64 `json:"offset"`
		Limit     *float64 `json:"limit"`
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, fmt.Errorf("invalid arguments: %w", err)
	}
	agent := tools.CallerFrom(ctx).AgentID
	if in.Action == "list" {
		return p.list(agent), nil
	}
	if in.Action == "" {
		return nil, errors.New("action required")
	}
	if strings.TrimSpace(in.SessionID) == "" {
		return nil, fmt.Errorf("sessionId required for action %s", in.Action)
	}
	j, err := p.jobs.get(agent, in.SessionID)
	if err != nil {
		return nil, err
	}
	switch in.Action {
	case "poll":
		wait := time.Duration(0)
		if in.Timeout != nil && *in.Timeout > 0 {
			wait = min(time.Duration(*in.Timeout*float64(time.Millisecond)), maxPollWait)
		}
		return p.poll(ctx, j, wait), nil
	case "log":
		return p.log(j, in.Offset, in.Limit), nil
	case "write":
		if in.Data == nil && !in.EOF {
			return nil, errors.New("data required for action write")
		}
		return p.write(j, deref(in.Data), in.EOF)
	case "send-keys":
		if len(in.Keys) == 0 {
			return nil, errors.New("keys required for action send-keys")
		}
		var b strings.Builder
		for _, k := range in.Keys {
			b.WriteString(keyInput(k))
		}
		return p.write(j, b.String(), false)
	case "submit":
		return p.write(j, "\n", false)
	case "paste":
		if in.Text == nil {
			return nil, errors.New("text required for action paste")
		}
		return p.write(j, *in.Text, false)
	case "kill":
		if _, ended := j.ended(); ended {
			return p.poll(ctx, j, 0), nil
		}
		j.kill()
		<-j.done
		return &tools.Result{Text: fmt.Sprintf("Killed session %s.", j.id), Details: p.details(j)}, nil
	case "clear", "remove":
		if err := p.jobs.remove(agent, j.id); err != nil {
			return nil, err
		}
		return &tools.Result{Text: fmt.Sprintf("Removed session %s.", j.id)}, nil
	}
	return nil, fmt.Errorf("unknown action %q: use list, poll, log, write, send-keys, submit, paste, kill or clear", in.Action)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// status is a job's state word.
func (j *job) status() (string, *int) {
	if _, ended := j.ended(); !ended {
		return "running", nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.killed {
		return "killed", nil
	}
	d, _ := j.result.Details.(*Details)
	if d == nil {
		return "failed", nil
	}
	return d.Status, d.ExitCode
}

func (p *ProcessTool) details(j *job) *ProcessDetails {
	st, code := j.status()
	return &ProcessDetails{SessionID: j.id, Status: st, ExitCode: code}
}

func (p *ProcessTool) list(agent string) *tools.Result {
	jobs := p.jobs.list(agent)
	if len(jobs) == 0 {
		return &tools.Result{Text: "No background sessions.", Details: &ProcessDetails{Sessions: []ProcessSession{}}}
	}
	var b strings.Builder
	d := &ProcessDetails{}
	for _, j := range jobs {
		st, code := j.status()
		pid := j.proc.PID()
		cmd := j.command
		if len(cmd) > 80 {
			cmd = cmd[:77] + "..."
		}
		d.Sessions = append(d.Sessions, ProcessSession{SessionID: j.id, Status: st, PID: pid, Command: j.command, StartedAt: j.start.UnixMilli(), ExitCode: code})
		fmt.Fprintf(&b, "%s  %-9s  %s  %s\n", j.id, st, time.Since(j.start).Round(time.Second), cmd)
	}
	return &tools.Result{Text: strings.TrimRight(b.String(), "\n"), Details: d}
}

// poll returns the output since the last poll, waiting up to wait for some
// (or the exit), and the job's state.
func (p *ProcessTool) poll(ctx context.Context, j *job, wait time.Duration) *tools.Result {
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-j.done:
		case <-j.pending.changed():
		case <-t.C:
		case <-ctx.Done():
		}
	}
	out, dropped := j.pending.take()
	var b strings.Builder
	if dropped > 0 {
		fmt.Fprintf(&b, "[... %d earlier bytes not shown; use action log ...]\n", dropped)
	}
	if out == "" {
		b.WriteString("(no new output)")
	} else {
		b.WriteString(out)
	}
	d := p.details(j)
	switch d.Status {
	case "running":
		b.WriteString("\n\nProcess still running.")
	case "killed":
		b.WriteString("\n\nProcess was killed.")
	default:
		j.mu.Lock()
		res := j.result
		j.mu.Unlock()
		switch {
		case d.ExitCode != nil:
			fmt.Fprintf(&b, "\n\nProcess exited with code %d.", *d.ExitCode)
		case res != nil:
			if det, _ := res.Details.(*Details); det != nil && det.TimedOut {
				fmt.Fprintf(&b, "\n\nCommand timed out after %s seconds.", formatSeconds(j.timeout))
			} else if det != nil && det.ExitSignal != "" {
				b.WriteString("\n\nProcess ended by signal " + det.ExitSignal + ".")
			}
		}
	}
	return &tools.Result{Text: b.String(), Details: d}
}

// log returns the retained output, by lines when offset or limit is given.
func (p *ProcessTool) log(j *job, offset, limit *float64) *tools.Result {
	text, _ := j.out.String()
	if offset != nil || limit != nil {
		lines := strings.Split(text, "\n")
		from := 0
		if offset != nil {
			from = min(max(int(*offset), 0), len(lines))
		}
		to := len(lines)
		if limit != nil && *limit >= 1 {
			to = min(from+int(*limit), len(lines))
		}
		text = strings.Join(lines[from:to], "\n")
	}
	return &tools.Result{Text: orNoOutput(text), Details: p.details(j)}
}

// write sends data to the job's input, closing it with eof.
func (p *ProcessTool) write(j *job, data string, eof bool) (*tools.Result, error) {
	if _, ended := j.ended(); ended {
		return nil, fmt.Errorf("Session %s has exited; its input is closed", j.id)
	}
	if j.stdin == nil {
		return nil, fmt.Errorf("Session %s takes no input", j.id)
	}
	if data != "" {
		if _, err := j.stdin.Write([]byte(data)); err != nil {
			return nil, fmt.Errorf("write to session %s: %w", j.id, err)
		}
	}
	msg := fmt.Sprintf("Wrote %d bytes to session %s.", len(data), j.id)
	if eof {
		if err := j.stdin.Close(); err != nil {
			return nil, fmt.Errorf("close the input of session %s: %w", j.id, err)
		}
		msg += " Input closed."
	}
	return &tools.Result{Text: msg, Details: p.details(j)}, nil
}
