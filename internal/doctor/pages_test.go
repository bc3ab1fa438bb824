package doctor

import (
	"testing"

	"github.com/switchboardhq/switchboard/internal/store/sqlite"
)

// TestPagesNote: the store line notes a database of larger pages than new
// ones get, and says nothing of one of the same or smaller pages.
func TestPagesNote(t *testing.T) {
	for _, tc := range []struct {
		page, new int
		want      string
	}{
		{4096, 1024, "; 4096-byte pages, where new databases have 1024: converting it makes each write cheaper (docs/state.md)"},
		{1024, 1024, ""},
		{512, 1024, ""},
		{4096, 0, ""},
	} {
		if got := pagesNote(sqlite.CheckResult{PageSize: tc.page, NewPageSize: tc.new}); got != tc.want {
			t.Errorf("pagesNote(%d, %d) = %q, want %q", tc.page, tc.new, got, tc.want)
		}
	}
}
