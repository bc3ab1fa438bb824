package sandbox

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestDenyProgram runs the filter on seccomp_data records (x/net/bpf's VM
// loads words big-endian, so the records are written that way).
func TestDenyProgram(t *testing.T) {
	const x86 = unix.AUDIT_ARCH_X86_64
	prog := denyProgram(x86, true, []uint32{unix.SYS_UNSHARE, unix.SYS_MOUNT, unix.SYS_ACCT})
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		arch, nr uint32
		want     uint32
	}{
		{"first denied", x86, unix.SYS_UNSHARE, seccompRetErrno | errnoEPERM},
		{"middle denied", x86, unix.SYS_MOUNT, seccompRetErrno | errnoEPERM},
		{"last denied", x86, unix.SYS_ACCT, seccompRetErrno | errnoEPERM},
		{"allowed", x86, unix.SYS_READ, seccompRetAllow},
		{"x32 call", x86, x32Bit | unix.SYS_READ, seccompRetErrno | errnoENOSYS},
		{"other architecture", unix.AUDIT_ARCH_I386, unix.SYS_UNSHARE, seccompRetAllow},
	} {
		data := make([]byte, 64)
		binary.BigEndian.PutUint32(data[seccompNrOffset:], c.nr)
		binary.BigEndian.PutUint32(data[seccompArchOffset:], c.arch)
		got, err := vm.Run(data)
		if err != nil || uint32(got) != c.want {
			t.Errorf("%s: %#x, %v; want %#x", c.name, got, err, c.want)
		}
	}
	// The list the sandbox uses resolves on this architecture.
	if _, err := nativeDenyProgram(); err != nil {
		t.Fatal(err)
	}
}
