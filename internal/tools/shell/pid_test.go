package shell

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// readPid reads the process id a command wrote to file name in ws.
func readPid(t *testing.T, ws, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ws, name))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return pid
}
