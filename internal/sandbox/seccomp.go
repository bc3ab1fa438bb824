package sandbox

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"

	seccomp "github.com/elastic/go-seccomp-bpf"
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

var filterOnce struct {
	sync.Once
	prog []byte
	err  error
}

// seccompProgram returns the filter as bwrap's --seccomp reads it: the
// raw struct sock_filter array in native (little-endian) byte order.
func seccompProgram() ([]byte, error) {
	filterOnce.Do(func() {
		p := seccomp.Policy{
			DefaultAction: seccomp.ActionAllow,
			Syscalls:      []seccomp.SyscallGroup{{Action: seccomp.ActionErrno, Names: deniedSyscalls}},
		}
		insns, err := p.Assemble()
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
