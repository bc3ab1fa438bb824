//go:build linux

package sandbox

import (
	"fmt"
	"runtime"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// syscallNr is the number of a deniedSyscalls name on this architecture.
func syscallNr(name string) (uint32, bool) {
	switch name {
	case "unshare":
		return unix.SYS_UNSHARE, true
	case "setns":
		return unix.SYS_SETNS, true
	case "mount":
		return unix.SYS_MOUNT, true
	case "umount2":
		return unix.SYS_UMOUNT2, true
	case "pivot_root":
		return unix.SYS_PIVOT_ROOT, true
	case "chroot":
		return unix.SYS_CHROOT, true
	case "ptrace":
		return unix.SYS_PTRACE, true
	case "process_vm_readv":
		return unix.SYS_PROCESS_VM_READV, true
	case "process_vm_writev":
		return unix.SYS_PROCESS_VM_WRITEV, true
	case "keyctl":
		return unix.SYS_KEYCTL, true
	case "add_key":
		return unix.SYS_ADD_KEY, true
	case "request_key":
		return unix.SYS_REQUEST_KEY, true
	case "bpf":
		return unix.SYS_BPF, true
	case "perf_event_open":
		return unix.SYS_PERF_EVENT_OPEN, true
	case "userfaultfd":
		return unix.SYS_USERFAULTFD, true
	case "init_module":
		return unix.SYS_INIT_MODULE, true
	case "finit_module":
		return unix.SYS_FINIT_MODULE, true
	case "delete_module":
		return unix.SYS_DELETE_MODULE, true
	case "kexec_load":
		return unix.SYS_KEXEC_LOAD, true
	case "open_by_handle_at":
		return unix.SYS_OPEN_BY_HANDLE_AT, true
	case "name_to_handle_at":
		return unix.SYS_NAME_TO_HANDLE_AT, true
	case "swapon":
		return unix.SYS_SWAPON, true
	case "swapoff":
		return unix.SYS_SWAPOFF, true
	case "reboot":
		return unix.SYS_REBOOT, true
	case "acct":
		return unix.SYS_ACCT, true
	}
	return 0, false
}

// auditArch is the seccomp architecture id of the architecture this
// binary runs on.
func auditArch() (uint32, bool) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, true
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, true
	case "386":
		return unix.AUDIT_ARCH_I386, true
	case "arm":
		return unix.AUDIT_ARCH_ARM, true
	case "riscv64":
		return unix.AUDIT_ARCH_RISCV64, true
	case "ppc64le":
		return unix.AUDIT_ARCH_PPC64LE, true
	case "s390x":
		return unix.AUDIT_ARCH_S390X, true
	case "loong64":
		return unix.AUDIT_ARCH_LOONGARCH64, true
	}
	return 0, false
}

// nativeDenyProgram is denyProgram of deniedSyscalls for the architecture
// this binary runs on.
func nativeDenyProgram() ([]bpf.Instruction, error) {
	id, ok := auditArch()
	if !ok {
		return nil, fmt.Errorf("no seccomp architecture id for %s", runtime.GOARCH)
	}
	nrs := make([]uint32, len(deniedSyscalls))
	for i, name := range deniedSyscalls {
		if nrs[i], ok = syscallNr(name); !ok {
			return nil, fmt.Errorf("no number for syscall %s", name)
		}
	}
	return denyProgram(id, runtime.GOARCH == "amd64", nrs), nil
}
