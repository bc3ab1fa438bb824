//go:build !linux

package sandbox

import (
	"errors"

	"golang.org/x/net/bpf"
)

// nativeDenyProgram fails: seccomp is Linux's.
func nativeDenyProgram() ([]bpf.Instruction, error) {
	return nil, errors.New("seccomp needs Linux")
}
