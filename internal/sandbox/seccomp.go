package sandbox

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"

	"golang.org/x/net/bpf"
)

// deniedSyscalls fail with EPERM inside the sandbox: namespaces and
// mounts, tracing, the kernel keyring, BPF and perf, module and kexec
// loading, and handle-based opens that bypass the mount view.
var deniedSyscalls = []string{
	"unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
	"ptrace", "process_vm_readv", "process_vm_writev",
	"keyctl", "add_key", "request_key",
	"bpf", "perf_event_open", "userfaultfd",
	"init_module", "finit_module", "delete_module", "kexec_load",
	"open_by_handle_at", "name_to_handle_at",
	"swapon", "swapoff", "reboot", "acct",
}

// Offsets in struct seccomp_data, and the filter's return values (the
// errno in the low 16 bits of SECCOMP_RET_ERRNO).
const (
	seccompNrOffset   = 0
	seccompArchOffset = 4
	seccompRetAllow   = 0x7fff0000
	seccompRetErrno   = 0x00050000
	errnoEPERM        = 1
	errnoENOSYS       = 38
	// x32Bit marks a syscall of the x32 ABI on x86-64, which would
	// otherwise reach the same calls under other numbers.
	x32Bit = 0x40000000
)

// denyProgram is the filter: on the native architecture (audit arch id),
// each of nrs fails with EPERM and (on x86-64) every x32 call with
// ENOSYS; everything else, and any other architecture, is allowed. This
// is what the seccomp library used before wrote for the same list; the
// library built syscall tables of every architecture at init (a fifth of
// a megabyte on every start) for 25 numbers of one.
func denyProgram(auditArch uint32, x32 bool, nrs []uint32) []bpf.Instruction {
	var x32Check []bpf.Instruction
	if x32 {
		x32Check = []bpf.Instruction{
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32Bit, SkipFalse: 1},
			bpf.RetConstant{Val: seccompRetErrno | errnoENOSYS},
		}
	}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: seccompArchOffset, Size: 4},
		// Another architecture goes to the final allow.
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: auditArch, SkipTrue: uint8(1 + len(x32Check) + len(nrs))},
		bpf.LoadAbsolute{Off: seccompNrOffset, Size: 4},
	}
	prog = append(prog, x32Check...)
	for i, nr := range nrs {
		// A match skips the rest of the list and the allow.
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipTrue: uint8(len(nrs) - i)})
	}
	return append(prog, bpf.RetConstant{Val: seccompRetAllow}, bpf.RetConstant{Val: seccompRetErrno | errnoEPERM})
}

var filterOnce struct {
	sync.Once
	prog []byte
	err  error
}

// seccompProgram returns the filter as bwrap's --seccomp reads it: the
// raw struct sock_filter array in native (little-endian) byte order.
func seccompProgram() ([]byte, error) {
	filterOnce.Do(func() {
		insns, err := nativeDenyProgram()
		if err != nil {
			filterOnce.err = fmt.Errorf("sandbox: seccomp filter: %w", err)
			return
		}
		raw, err := bpf.Assemble(insns)
		if err != nil {
			filterOnce.err = fmt.Errorf("sandbox: seccomp filter: %w", err)
			return
		}
		buf := make([]byte, 0, 8*len(raw))
		for _, r := range raw {
			buf = binary.LittleEndian.AppendUint16(buf, r.Op)
			buf = append(buf, r.Jt, r.Jf)
			buf = binary.LittleEndian.AppendUint32(buf, r.K)
		}
		filterOnce.prog = buf
	})
	return filterOnce.prog, filterOnce.err
}

// seccompFile returns a file holding the filter, positioned at its start,
// for bwrap to read from an inherited descriptor. The caller closes it.
func seccompFile() (*os.File, error) {
	prog, err := seccompProgram()
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp("", "switchboard-seccomp-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp filter: %w", err)
	}
	_ = os.Remove(f.Name())
	if _, err := f.Write(prog); err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox: seccomp filter: %w", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox: seccomp filter: %w", err)
	}
	return f, nil
}
