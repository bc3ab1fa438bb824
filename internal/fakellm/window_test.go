package fakellm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/provider"
)

func TestContextWindowRefusesWithTheAPIsBody(t *testing.T) {
	srv := fakellm.Start(t, fakellm.Options{ContextWindow: 100})
	big := strings.Repeat("x", 600)
	body := `{"model":"echo-1","messages":[{"role":"user","content":"` + big + `"}]}`
	status, _, got := send(t, srv, "POST", "/v1/chat/completions", body, nil)
	want := `{"error":{"message":"This model's maximum context length is 100 tokens. However, your messages resulted in 203 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}` + "\n"
	if status != 400 || got != want {
		t.Errorf("openai: %d %s\nwant %s", status, got, want)
	}
	status, _, got = send(t, srv, "POST", "/v1/messages", `{"model":"echo-1","max_tokens":10,"messages":[{"role":"user","content":"`+big+`"}]}`, nil)
	want = `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 203 tokens > 100 maximum"}}` + "\n"
	if status != 400 || got != want {
		t.Errorf("anthropic: %d %s\nwant %s", status, got, want)
	}
	if srv.Overflows() != 2 {
		t.Errorf("Overflows = %d", srv.Overflows())
	}
	// Through the real adapters the refusal is an overflow error, and a
	// small request passes with the counted prompt tokens as usage.
	for _, ad := range adapters(t, srv, "") {
		_, _, _, _, err := provider.Collect(ad.p.Stream(context.Background(), &provider.Request{Model: "echo-1", Messages: []provider.Message{user(big)}, MaxTokens: 10}))
		if err == nil || !compaction.IsOverflow(err.Error()) {
			t.Errorf("%s: err = %v, want an overflow", ad.name, err)
		}
		req := &provider.Request{Model: "echo-1", Messages: []provider.Message{user("hi")}, MaxTokens: 10}
		res, _ := collect(t, ad.p, req)
		if res.Usage.Input != int64(fakellm.CountTokens(req)) {
			t.Errorf("%s: usage input %d, want %d", ad.name, res.Usage.Input, fakellm.CountTokens(req))
		}
	}
}

func TestSummaryPrompts(t *testing.T) {
	srv := fakellm.Start(t, fakellm.Options{})
	msgs := []provider.Message{user("deploy TICKET-77 to host a1b2c3d4e5f6"), {Role: provider.RoleAssistant, Text: "ok"}}
	for _, mode := range []string{compaction.ModeSafeguard, compaction.ModeDefault} {
		req := compaction.BuildRequest(compaction.PromptInput{Mode: mode, Messages: msgs, LatestRequest: "deploy TICKET-77"}, "echo-1", 500)
		for _, ad := range adapters(t, srv, "") {
			res, _ := collect(t, ad.p, req)
			if mode == compaction.ModeSafeguard {
				if bad := compaction.Audit(res.Text, "deploy TICKET-77"); bad != "" {
					t.Errorf("%s: safeguard summary fails the audit (%s):\n%s", ad.name, bad, res.Text)
				}
			} else if !strings.HasPrefix(res.Text, "## Goal") {
				t.Errorf("%s: default summary = %q", ad.name, res.Text)
			}
			if !strings.Contains(res.Text, "TICKET-77") || !strings.Contains(res.Text, "a1b2c3d4e5f6") {
				t.Errorf("%s: identifiers lost: %s", ad.name, res.Text)
			}
		}
	}
}
