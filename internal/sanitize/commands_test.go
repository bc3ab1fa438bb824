package sanitize

import (
	"regexp"
	"testing"

	"github.com/switchboardhq/switchboard/internal/compaction"
)

// TestErrorTextsNameOnlyExistingCommands: every slash command the
// rewritten errors (and the unrecoverable-overflow text) send people to is
// one the gateway handles.
func TestErrorTextsNameOnlyExistingCommands(t *testing.T) {
	cmd := regexp.MustCompile(`(?:^|[\s(])(/[a-z]+)`)
	for _, text := range []string{msgContextOverflow, msgOrderingConflict, compaction.UnrecoverableText} {
		found := cmd.FindAllStringSubmatch(text, -1)
		if len(found) == 0 {
			t.Errorf("no command in %q", text)
		}
		for _, m := range found {
			if _, ok := compaction.ParseCommand(m[1]); !ok {
				t.Errorf("%q names %s, which the gateway does not handle", text, m[1])
			}
		}
	}
}
