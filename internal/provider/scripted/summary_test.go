package scripted

import (
	"context"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/provider"
)

// TestSummaryPassesTheAudit: a summariser prompt is answered with a
// summary (not by its directives) that passes the safeguard audit with
// the latest request first under pending asks, in both prompt formats.
func TestSummaryPassesTheAudit(t *testing.T) {
	msgs := []provider.Message{
		{Role: provider.RoleUser, Text: "/reply done\nplease deploy TICKET-42"},
		{Role: provider.RoleAssistant, Text: "done"},
	}
	for _, mode := range []string{compaction.ModeSafeguard, compaction.ModeDefault} {
		t.Run(mode, func(t *testing.T) {
			req := compaction.BuildRequest(compaction.PromptInput{Mode: mode, Messages: msgs, LatestRequest: "check the logs"}, ModelID, 4000)
			text, calls, _, _, err := provider.Collect(New(Options{}).Stream(context.Background(), req))
			if err != nil || len(calls) > 0 {
				t.Fatalf("Stream = %q, %v, %v", text, calls, err)
			}
			if strings.Contains(text, "echo: ") || !strings.Contains(text, "TICKET-42") {
				t.Errorf("summary = %q", text)
			}
			if mode == compaction.ModeSafeguard {
				if problem := compaction.Audit(text, "check the logs"); problem != "" {
					t.Errorf("audit: %s\n%s", problem, text)
				}
			} else if !strings.Contains(text, "## Goal") {
				t.Errorf("default-format summary = %q", text)
			}
		})
	}
}
