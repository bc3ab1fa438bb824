//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestInheritedFDsStayOut is issue 30's reproduction: a pipe's write end
// the gateway inherited at fd 251 was open in every exec command. The
// gateway marks inherited descriptors close-on-exec at start, so a command
// sees 0, 1 and 2 (and the descriptor of its own listing) only.
func TestInheritedFDsStayOut(t *testing.T) {
	t.Run("host", func(t *testing.T) { testInheritedFDs(t, "") })
	t.Run("sandbox", func(t *testing.T) {
		if _, err := exec.LookPath("bwrap"); err != nil {
			t.Skip("bwrap not installed")
		}
		testInheritedFDs(t, `{ id: "main", default: true, sandbox: { mode: "all" } }`)
	})
}

func testInheritedFDs(t *testing.T, agentsList string) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	files := make([]*os.File, 251-3+1) // nil entries are closed in the child
	files[len(files)-1] = w
	g := startFiles(t, 0, files, "", nil, "", "", agentsList, "")
	w.Close()
	c := g.dial(t)
	call(t, c, "chat.send", map[string]any{"sessionKey": "agent:main:main", "message": toolTurn("exec", map[string]any{"command": "ls /proc/self/fd"}), "idempotencyKey": "fd1"})
	waitRun(t, c, "fd1")
	got := strings.Fields(lastToolText(t, c, "agent:main:main", "exec"))
	// ls itself holds the directory it lists open as the lowest free
	// descriptor, 3.
	if !slices.Equal(got, []string{"0", "1", "2", "3"}) {
		t.Fatalf("descriptors in exec = %q, want 0 1 2 (and 3, the listing)", got)
	}
}
