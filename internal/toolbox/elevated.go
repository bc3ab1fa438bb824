package toolbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/tools"
)

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
	// level is the session's elevated level ("" or "off": elevated only
	// when a call asks for it).
	level string
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
	// A call's elevated wins; without one the session's level decides,
	// and only when the gates pass (as the reference).
	elevated := e.level != "" && e.level != policy.ElevatedOff && e.failing == ""
	if raw, ok := fields["elevated"]; ok && string(raw) != "null" {
		elevated = false
		_ = json.Unmarshal(raw, &elevated)
	}
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
		//lint:ignore ST1005 the reference's text, which models read
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
