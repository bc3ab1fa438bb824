package daemon

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// Elevated gates, as the reference names them in its refusal.
const (
	gateEnabled   = "enabled (tools.elevated.enabled / agents.entries.*.tools.elevated.enabled)"
	gateAllowFrom = "allowFrom (tools.elevated.allowFrom.<provider> / agents.entries.*.tools.elevated.allowFrom.<provider>)"
)

// elevatedGate says whether a run may use exec's elevated escape
// (tools.elevated): "" when it may, else the failing gate. The gates are
// tools.elevated.enabled and the agent's own (unset means on), then the
// sender on tools.elevated.allowFrom.<channel> and, when the agent has
// one, on its own list. A sender is the chat a message came from (the
// direct peer); "*" allows every sender of the channel. Operator clients
// are channel "webchat".
func elevatedGate(ag settings.Agent, in *agent.Input) string {
	if !ag.Elevated {
		return gateEnabled
	}
	channel, sender := sessionkey.InternalChannel, ""
	if in != nil {
		channel, sender = cmp.Or(in.Channel, channel), in.To
	}
	if !senderAllowed(ag.ElevatedFrom[channel], sender) ||
		ag.ElevatedFromOwn != nil && !senderAllowed(ag.ElevatedFromOwn[channel], sender) {
		return gateAllowFrom
	}
	return ""
}

// senderAllowed reports whether sender is on allow ("*" matches anyone;
// entries compare case-insensitively).
func senderAllowed(allow []string, sender string) bool {
	sender = strings.ToLower(strings.TrimSpace(sender))
	return slices.ContainsFunc(allow, func(a string) bool {
		a = strings.ToLower(strings.TrimSpace(a))
		return a == "*" || a != "" && a == sender
	})
}

// elevatedExec is the exec a run is offered: inner (confined to the
// sandbox, or the host's, approvals applied), with the reference's
// elevated escape and host checks in front of it. A sandboxed run's
// exec {elevated: true} runs on the gateway host through host when the
// elevated gates pass; otherwise it is refused with the reference's text
// naming the failing gate and the fix-it keys. Asking for host "gateway"
// or "node" without elevated in a sandbox is refused, as there.
type elevatedExec struct {
	inner tools.Tool
	// host runs an elevated command on the gateway host (nil when the
	// run is not sandboxed: inner already runs there).
	host      tools.Tool
	sandboxed bool
	// failing is the elevated gate that fails ("" when none does).
	failing          string
	channel, session string
}

func (e *elevatedExec) Name() string            { return e.inner.Name() }
func (e *elevatedExec) Description() string     { return e.inner.Description() }
func (e *elevatedExec) Schema() json.RawMessage { return e.inner.Schema() }

// Unwrap returns the exec it guards.
func (e *elevatedExec) Unwrap() tools.Tool { return e.inner }

func (e *elevatedExec) Call(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
	var fields map[string]json.RawMessage
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, &fields); err != nil || fields == nil {
		return e.inner.Call(ctx, args) // the inner tool reports bad arguments
	}
	var elevated bool
	_ = json.Unmarshal(fields["elevated"], &elevated)
	var host string
	_ = json.Unmarshal(fields["host"], &host)
	host = strings.TrimSpace(host)
	if elevated {
		if e.failing != "" {
			return nil, e.unavailable()
		}
		if !e.sandboxed {
			return e.inner.Call(ctx, args)
		}
		if host != "node" {
			delete(fields, "host") // elevated runs on the gateway host
		}
		return e.host.Call(ctx, rewrite(fields))
	}
	if !e.sandboxed {
		return e.inner.Call(ctx, args)
	}
	switch host {
	case "gateway", "node":
		return nil, fmt.Errorf("exec host not allowed (requested %s; configured host is auto; set tools.exec.host=%s to allow this override).", host, host)
	case "sandbox", "auto":
		delete(fields, "host") // the sandbox is where this exec runs
		return e.inner.Call(ctx, rewrite(fields))
	}
	return e.inner.Call(ctx, args)
}

// unavailable is the reference's refusal of an elevated exec.
func (e *elevatedExec) unavailable() error {
	runtime := "direct"
	if e.sandboxed {
		runtime = "sandboxed"
	}
	lines := []string{
		fmt.Sprintf("elevated is not available right now (runtime=%s).", runtime),
		"Failing gates: " + e.failing,
		fmt.Sprintf("Context: provider=%s session=%s", e.channel, e.session),
		"Fix-it keys:",
		"- tools.elevated.enabled",
		"- tools.elevated.allowFrom.<provider>",
		"- agents.entries.*.tools.elevated.enabled",
		"- agents.entries.*.tools.elevated.allowFrom.<provider>",
	}
	return fmt.Errorf("%s", strings.Join(lines, "\n"))
}

// rewrite re-encodes exec's arguments after a field was dropped.
func rewrite(fields map[string]json.RawMessage) json.RawMessage {
	b, err := json.Marshal(fields)
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}
