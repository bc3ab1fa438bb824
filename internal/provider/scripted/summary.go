package scripted

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/lazy"
	"github.com/switchboardhq/switchboard/internal/provider"
)

// summaryOpening is the first sentence of the summariser's system prompt.
func summaryOpening() string {
	s, _, _ := strings.Cut(compaction.SystemPrompt, " Your task")
	return s
}

// IsSummaryRequest reports whether req is a compaction summariser call
// (its system prompt opens as the summariser's, whatever a wire format
// added after it).
func IsSummaryRequest(req *provider.Request) bool {
	return req != nil && strings.HasPrefix(req.System, summaryOpening())
}

func identifierRE() *regexp.Regexp { return identifierREValue.Get() }

// identifierREValue is built on the first call of identifierRE.
var identifierREValue = lazy.Value[*regexp.Regexp]{New: buildIdentifierRE}

// buildIdentifierRE builds identifierRE's value.
func buildIdentifierRE() *regexp.Regexp {
	return regexp.MustCompile(`\b[A-Z][A-Z0-9]*-\d+\b|\b[0-9a-f]{12,40}\b`)
}

// Summary is the offline model's answer to a summariser prompt: the sections
// the prompt asks for (safeguard or default format), with the latest
// unresolved request first under pending asks, the identifiers of the
// conversation listed exactly, and a count of what was summarised. It is
// much shorter than the conversation.
func Summary(req *provider.Request) string {
	prompt := ""
	if n := len(req.Messages); n > 0 {
		prompt = req.Messages[n-1].Text
	}
	conv, _, _ := strings.Cut(prompt, "</conversation>")
	conv = strings.TrimPrefix(conv, "<conversation>\n")
	lines := strings.Count(conv, "\n\n") + 1
	userTurns := strings.Count(conv, "[User]: ")
	latest := ""
	if _, rest, ok := strings.Cut(prompt, compaction.LatestRequestMarker+"\n"); ok {
		latest, _, _ = strings.Cut(rest, "\n"+compaction.UntrustedEnd)
	}
	seen := map[string]bool{}
	var ids []string
	for _, id := range identifierRE().FindAllString(conv+prompt[len(conv):], -1) {
		if !seen[id] && len(ids) < 12 {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	idList := "- (none)"
	if len(ids) > 0 {
		idList = "- " + strings.Join(ids, "\n- ")
	}
	stats := "- Summarised " + strconv.Itoa(lines) + " conversation entries (" + strconv.Itoa(userTurns) + " user turns, " + strconv.Itoa(len(conv)) + " bytes)."
	if strings.Contains(prompt, "## Pending user asks") {
		pending := "- (none)"
		if latest != "" {
			pending = "- " + latest
		}
		return strings.Join([]string{
			"## Decisions", stats,
			"## Open TODOs", "- Continue the conversation.",
			"## Constraints/Rules", "- (none)",
			"## Pending user asks", pending,
			"## Exact identifiers", idList,
		}, "\n")
	}
	return strings.Join([]string{
		"## Goal", "- Continue the conversation.",
		"## Constraints & Preferences", "- (none)",
		"## Progress", "### Done", stats, "### In Progress", "- [ ] (none)", "### Blocked", "- (none)",
		"## Key Decisions", "- (none)",
		"## Next Steps", "1. Answer the next message.",
		"## Critical Context", idList,
	}, "\n")
}
