package approval

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/switchboardhq/switchboard/internal/tools"
)

// GateConfig configures the exec gate. Broker, Allowlists and Policy are
// required.
type GateConfig struct {
	Broker     *Broker
	Allowlists *Allowlists
	// Policy returns the effective policy of an agent.
	Policy func(agentID string) Policy
	// Clients reports whether a connected operator client can answer
	// approvals; nil means none can.
	Clients func() bool
	// Decided, when set, hears each outcome that involved the policy:
	// "allowed" (an operator allowed it), and the refusals "denied" (an
	// operator denied it), "refused" (policy or unbindable), "expired"
	// (unanswered, askFallback refused) and "headless" (no approval client,
	// askFallback refused).
	Decided func(outcome string)
}

// Gate is the exec tool decorator: it checks each command against the
// agent's policy and, when an approval is needed, waits for an operator's
// decision before the wrapped tool runs it. A refusal is the tool's
// result, in the reference's words; the command does not run.
type Gate struct {
	tools.Tool
	cfg *GateConfig
}

var _ tools.Tool = Gate{}

// Wrap returns t gated by cfg.
func (cfg *GateConfig) Wrap(t tools.Tool) tools.Tool { return Gate{Tool: t, cfg: cfg} }

// Unwrap returns the gated tool.
func (g Gate) Unwrap() tools.Tool { return g.Tool }

// askRank orders the ask modes, off first; an unknown mode ranks with off.
func askRank(mode string) int {
	switch mode {
	case AskOnMiss:
		return 1
	case AskAlways:
		return 2
	}
	return 0
}

// Call implements tools.Tool.
func (g Gate) Call(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
	var req struct {
		Command string `json:"command"`
		Workdir string `json:"workdir"`
		Ask     string `json:"ask"`
	}
	if err := json.Unmarshal(args, &req); err != nil || strings.TrimSpace(req.Command) == "" {
		return g.Tool.Call(ctx, args) // the tool reports its own argument errors
	}
	caller := tools.CallerFrom(ctx)
	p := g.cfg.Policy(caller.AgentID).Normalized()
	if p.Ask != AskOff && askRank(req.Ask) > askRank(p.Ask) {
		// A call may only harden the ask mode, and not when the operator
		// turned asking off (the reference ignores it then).
		p.Ask = req.Ask
	}
	if p.Security == SecurityFull && p.Ask == AskOff {
		return g.Tool.Call(ctx, args)
	}
	cwd := caller.Workspace
	if req.Workdir != "" {
		cwd = req.Workdir
		if !filepath.IsAbs(cwd) && caller.Workspace != "" {
			cwd = filepath.Join(caller.Workspace, cwd)
		}
	}
	a := Analyze(req.Command)
	d := Decide(p, a, func(bin string) bool { return g.cfg.Allowlists.Matches(caller.AgentID, bin, cwd) })
	switch d.Verdict {
	case Run:
		return g.Tool.Call(ctx, args)
	case Refuse:
		g.decided("refused")
		if d.Text != "" {
			return deniedResult(d.Text, cwd, false), nil
		}
		return deniedResult(fmt.Sprintf("Exec denied (%s): %s", d.Reason, req.Command), cwd, false), nil
	case Unbindable:
		g.decided("refused")
		return deniedResult(UnbindableText(req.Command), cwd, false), nil
	}
	if g.cfg.Clients == nil || !g.cfg.Clients() {
		if run, _ := Fallback(p, d); run {
			return g.Tool.Call(ctx, args)
		}
		g.decided("headless")
		return deniedResult(HeadlessText(p), cwd, false), nil
	}
	var argv []string
	if len(a.Segments) == 1 {
		argv = a.Segments[0].Argv
	}
	bins := a.Bins()
	resolved := ""
	if len(bins) > 0 {
		resolved = ResolvePath(bins[0], cwd)
	}
	rec, err := g.cfg.Broker.Open(Request{
		Command: req.Command, CommandArgv: argv, Cwd: cwd, Host: "gateway",
		Security: p.Security, Ask: p.Ask, AskFallback: p.AskFallback,
		AgentID: caller.AgentID, SessionKey: caller.SessionKey, RunID: caller.RunID, ToolCallID: caller.ToolCallID,
		AllowedDecisions: AllowedDecisions(p.Ask), ResolvedPath: resolved, Bins: bins,
	})
	if err != nil {
		return nil, fmt.Errorf("exec: approval: %w", err)
	}
	decision, err := g.cfg.Broker.Await(ctx, rec.ID)
	if err != nil {
		return nil, fmt.Errorf("exec: waiting for approval %s: %w", rec.ID, err)
	}
	switch decision {
	case AllowOnce:
		g.decided("allowed")
		return g.Tool.Call(ctx, args)
	case AllowAlways:
		g.decided("allowed")
		if err := g.cfg.Allowlists.Add(caller.AgentID, bins, req.Command, cwd); err != nil {
			return nil, fmt.Errorf("exec: allow-always: %w", err)
		}
		return g.Tool.Call(ctx, args)
	case Deny:
		g.decided("denied")
		return deniedResult(DeniedText(rec.ID, "user-denied", req.Command), cwd, false), nil
	}
	run, reason := Fallback(p, d)
	if run {
		return g.Tool.Call(ctx, args)
	}
	g.decided("expired")
	return deniedResult(DeniedText(rec.ID, reason, req.Command), cwd, true), nil
}

func (g Gate) decided(outcome string) {
	if g.cfg.Decided != nil {
		g.cfg.Decided(outcome)
	}
}

// DeniedText is the reference's text for a denied approval-gated command.
func DeniedText(id, reason, command string) string {
	return fmt.Sprintf("Exec denied (gateway id=%s, %s): %s", id, reason, command)
}

// UnbindableText is the refusal of a command an approval cannot be bound
// to.
func UnbindableText(command string) string {
	return "Exec denied (SYSTEM_RUN_DENIED: approval cannot safely bind this command): " + command
}

// HeadlessText is the reference's refusal when no operator client can
// answer an approval and askFallback does not allow the command.
func HeadlessText(p Policy) string {
	return strings.Join([]string{
		"exec denied: Headless runs cannot wait for interactive exec approval.",
		fmt.Sprintf("Effective host exec policy: security=%s ask=%s askFallback=%s", p.Security, p.Ask, p.AskFallback),
		"Fix one of these:",
		`- set tools.exec security="full" and ask="off" for trusted local automation`,
		"- keep allowlist mode and add an explicit allowlist entry for this command",
		"- rerun with an approval client connected (the web UI, or `switchboard approvals`) and approve when prompted",
	}, "\n")
}

// deniedResult is exec's result for a command that did not run.
func deniedResult(text, cwd string, timedOut bool) *tools.Result {
	return &tools.Result{Text: text, Details: map[string]any{
		"status": "failed", "exitCode": nil, "durationMs": 0, "aggregated": text, "timedOut": timedOut, "cwd": cwd,
	}}
}
