//go:build !unix

package shell

import (
	"os"
	"os/exec"
)

// setGroup does nothing where process groups are not available.
func setGroup(*exec.Cmd) {}

// killGroup kills the command's process.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// exitStatus returns the exit code.
func exitStatus(ps *os.ProcessState) (int, string) {
	if ps == nil {
		return -1, ""
	}
	return ps.ExitCode(), ""
}
