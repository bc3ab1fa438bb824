//go:build !linux

package shell

import "testing"

// awaitExit would wait for process pid to exit; without pidfds the check
// that needs it is skipped.
func awaitExit(t *testing.T, pid int) {
	t.Helper()
	t.Skipf("waiting for process %d to exit needs pidfd (Linux)", pid)
}
