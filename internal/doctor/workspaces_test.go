package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWorkspaceMarkers(t *testing.T) {
	shared, own := t.TempDir(), t.TempDir()
	if err := WriteNodeMarkers([]string{shared}, "host:1"); err != nil {
		t.Fatal(err)
	}
	if err := WriteNodeMarkers([]string{shared, own}, "a/b"); err != nil { // ids are escaped
		t.Fatal(err)
	}
	// A file named as a marker that names another node does not count.
	if err := os.WriteFile(markerPath(own, "host:2"), []byte("host:3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		workspaces []string
		live       []string
		status     CheckStatus
		detail     string
	}{
		{"all shared", []string{shared}, []string{"a/b", "host:1"}, CheckOK, "shared by the live nodes a/b, host:1"},
		{"one missing", []string{own}, []string{"a/b", "host:1"}, CheckFail, own + " lacks the marker of node host:1"},
		{"wrong content", []string{own}, []string{"host:2"}, CheckFail, own + " lacks the marker of node host:2"},
		{"two workspaces", []string{shared, own}, []string{"a/b", "host:1"}, CheckFail, own + " lacks the marker of node host:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := workspacesCheck(tc.workspaces, tc.live)
			if c.Status != tc.status || !strings.Contains(c.Detail, tc.detail) {
				t.Errorf("check = %s %q, want %s containing %q", c.Status, c.Detail, tc.status, tc.detail)
			}
			if c.Status == CheckFail && c.Fix == "" {
				t.Error("a failed check names no fix")
			}
		})
	}
	if err := RemoveNodeMarkers([]string{shared, own}, "a/b"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(own, markerDir, "a%2Fb")); !os.IsNotExist(err) {
		t.Errorf("marker left after removal: %v", err)
	}
	if err := RemoveNodeMarkers([]string{shared}, "never-written"); err != nil {
		t.Errorf("removing an absent marker: %v", err)
	}
}
