package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
)

// Runner starts commands for a backend that does not run them as child
// processes of the gateway, such as a container engine. The exec tool
// keeps what is the same everywhere (the output cap, the timeout,
// background sessions for the process tool); a runner only starts a
// command, streams its output, waits for it and kills it.
type Runner interface {
	// Start starts c and returns once it runs. An error means nothing
	// ran; its text reaches the model.
	Start(ctx context.Context, c Command) (Process, error)
}

// Command is one command for a Runner.
type Command struct {
	// Workspace is the caller's workspace on the host, symlinks resolved.
	Workspace string
	// Dir is the host directory the command starts in: Workspace or a
	// directory below it. The runner maps it into its own view.
	Dir string
	// Argv is the command: the shell, "-c" and the model's command line.
	Argv []string
	// Env holds the call's variables ("K=V"); the runner adds its own
	// base environment. Nothing of the gateway's environment is in it.
	Env []string
	// Output receives stdout and stderr, interleaved, until the command
	// ends. It is safe for concurrent use.
	Output io.Writer
	// Stdin keeps the command's input open for the process tool's write;
	// without it the command reads end of file.
	Stdin bool
}

// Process is a command a Runner started.
type Process interface {
	// PID is the command's process id on the gateway host, 0 when it has
	// none there.
	PID() int
	// Stdin is the command's input, nil unless Command.Stdin was set.
	Stdin() io.WriteCloser
	// Wait waits for the command to end and its output to be written. It
	// returns the exit code, or the name of the signal that ended it
	// ("SIGKILL"), or an error when waiting itself failed. It is called
	// once.
	Wait() (code int, signal string, err error)
	// Kill ends the command and everything it started. It may be called
	// at any time, more than once, also after the end.
	Kill()
}

// cmdProcess is a Process for a command run as the gateway's child (on
// the host, or under bubblewrap), in its own process group.
type cmdProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

var _ Process = (*cmdProcess)(nil)

// startCmd starts cmd in a new process group with its output going to
// out, and its input open when stdin is set.
func startCmd(cmd *exec.Cmd, out io.Writer, stdin bool) (*cmdProcess, error) {
	p := &cmdProcess{cmd: cmd}
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.WaitDelay = pipeGrace
	setGroup(cmd)
	if stdin {
		w, err := cmd.StdinPipe()
		if err != nil {
			return nil, fmt.Errorf("stdin: %w", err)
		}
		p.stdin = w
	}
	err := cmd.Start()
	// The child has its copies of the extra descriptors (the sandbox's
	// seccomp filter) now.
	for _, f := range cmd.ExtraFiles {
		_ = f.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	return p, nil
}

func (p *cmdProcess) PID() int {
	if p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

func (p *cmdProcess) Stdin() io.WriteCloser {
	if p.stdin == nil {
		return nil
	}
	return p.stdin
}

func (p *cmdProcess) Wait() (int, string, error) {
	werr := p.cmd.Wait()
	// Whatever the shell left running in its group goes with it.
	killGroup(p.cmd)
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) && !errors.Is(werr, exec.ErrWaitDelay) {
		return -1, "", werr
	}
	code, sig := exitStatus(p.cmd.ProcessState)
	return code, sig, nil
}

func (p *cmdProcess) Kill() { killGroup(p.cmd) }
