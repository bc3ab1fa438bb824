package toolbox

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// recordTool records the arguments of its calls.
type recordTool struct {
	name string
	got  []string
}

func (r *recordTool) Name() string            { return "exec" }
func (r *recordTool) Description() string     { return r.name }
func (r *recordTool) Schema() json.RawMessage { return json.RawMessage(`{}`) }
func (r *recordTool) Call(_ context.Context, args json.RawMessage) (*tools.Result, error) {
	r.got = append(r.got, string(args))
	return &tools.Result{Text: r.name}, nil
}

// The exec a run gets: elevated commands go to the host when the gates
// pass and are refused with the reference's text otherwise; a sandbox's
// exec refuses host gateway and node, and runs host sandbox or auto.
func TestElevatedExec(t *testing.T) {
	tests := []struct {
		name      string
		sandboxed bool
		failing   string
		args      string
		level     string
		wantTool  string // "inner", "host", or "" for an error
		wantArgs  string
		wantErr   string
	}{
		{"plain sandboxed", true, settings.ElevatedGateAllowFrom, `{"command":"ls"}`, "", "inner", `{"command":"ls"}`, ""},
		{"elevated allowed", true, "", `{"command":"ls","elevated":true,"host":"sandbox"}`, "", "host", `{"command":"ls","elevated":true}`, ""},
		{"elevated to a node", true, "", `{"command":"ls","elevated":true,"host":"node"}`, "", "host", `{"command":"ls","elevated":true,"host":"node"}`, ""},
		{"elevated refused", true, settings.ElevatedGateAllowFrom, `{"command":"ls","elevated":true}`, "", "", "",
			"elevated is not available right now (runtime=sandboxed).\nFailing gates: allowFrom (tools.elevated.allowFrom.<provider> / agents.entries.*.tools.elevated.allowFrom.<provider>)\nContext: provider=webchat session=agent:main:x\nFix-it keys:\n- tools.elevated.enabled\n"},
		{"direct elevated refused", false, settings.ElevatedGateEnabled, `{"command":"ls","elevated":true}`, "", "", "", "(runtime=direct).\nFailing gates: enabled (tools.elevated.enabled"},
		{"direct elevated allowed is a no-op", false, "", `{"command":"ls","elevated":true}`, "", "inner", `{"command":"ls","elevated":true}`, ""},
		{"host gateway from a sandbox", true, "", `{"command":"ls","host":"gateway"}`, "", "", "", "exec host not allowed (requested gateway; configured host is auto; set tools.exec.host=gateway to allow this override)."},
		{"host sandbox in a sandbox", true, "", `{"command":"ls","host":"sandbox"}`, "", "inner", `{"command":"ls"}`, ""},
		{"the session's level sends a plain call to the host", true, "", `{"command":"ls"}`, "on", "host", `{"command":"ls"}`, ""},
		{"a call's elevated false wins over the level", true, "", `{"command":"ls","elevated":false}`, "full", "inner", `{"command":"ls","elevated":false}`, ""},
		{"the level without the gates stays in the sandbox", true, settings.ElevatedGateAllowFrom, `{"command":"ls"}`, "on", "inner", `{"command":"ls"}`, ""},
		{"level off", true, "", `{"command":"ls"}`, "off", "inner", `{"command":"ls"}`, ""},
		{"direct host passes through", false, "", `{"command":"ls","host":"gateway"}`, "", "inner", `{"command":"ls","host":"gateway"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inner, host := &recordTool{name: "inner"}, &recordTool{name: "host"}
			e := &elevatedExec{inner: inner, sandboxed: tt.sandboxed, failing: tt.failing, channel: "webchat", session: "agent:main:x", level: tt.level}
			if tt.sandboxed && tt.failing == "" {
				e.host = host
			}
			res, err := e.Call(context.Background(), json.RawMessage(tt.args))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if len(inner.got)+len(host.got) != 0 {
					t.Errorf("a refused command ran: inner %q host %q", inner.got, host.got)
				}
				return
			}
			if err != nil || res.Text != tt.wantTool {
				t.Fatalf("result %v, %v; want the %s exec", res, err, tt.wantTool)
			}
			got := append(inner.got, host.got...)
			if len(got) != 1 || got[0] != tt.wantArgs {
				t.Errorf("args = %q, want %q", got, tt.wantArgs)
			}
		})
	}
}

// TestUntrustedGate: host-acting tools refuse a call whose chain came from
// outside the operator (read from the caller, however many hops ago),
// and an elevated command — which leaves the sandbox — is refused the
// same way; the operator's calls pass.
func TestUntrustedGate(t *testing.T) {
	refusals := 0
	box := &Box{refused: func(string) { refusals++ }}
	for _, tc := range []struct {
		name, origin string
		elevated     bool
		wantRan      bool
	}{
		{"operator", "", false, true},
		{"webhook, three hops on", "webhook", false, false},
		{"operator, elevated", "", true, true},
		{"a2a, elevated out of the sandbox", "a2a", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner, host := &recordTool{name: "inner"}, &recordTool{name: "host"}
			var tool tools.Tool = untrustedGate{Tool: inner, box: box}
			args := `{"command":"id"}`
			if tc.elevated {
				tool = &elevatedExec{inner: inner, host: untrustedGate{Tool: host, box: box}, sandboxed: true, channel: "webchat", session: "agent:main:x"}
				args = `{"command":"id","elevated":true}`
			}
			chain := tools.Chain{ID: "c", Hops: 3}.Taint(tc.origin)
			ctx := tools.WithCaller(context.Background(), tools.Caller{SessionKey: "agent:main:x", Chain: chain})
			before := refusals
			_, err := tool.Call(ctx, json.RawMessage(args))
			ran := len(inner.got)+len(host.got) > 0
			if ran != tc.wantRan {
				t.Fatalf("ran = %v (err %v), want %v", ran, err, tc.wantRan)
			}
			if !tc.wantRan && (err == nil || !strings.Contains(err.Error(), "comes from outside the operator ("+tc.origin+")") || refusals != before+1) {
				t.Fatalf("refusal = %v, counted %d", err, refusals-before)
			}
		})
	}
}
