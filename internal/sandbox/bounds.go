package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Default bounds of what a sandbox may fill.
const (
	// DefaultTmpBytes sizes each private tmpfs (/tmp, /var/tmp, /run):
	// a write past it fails with ENOSPC.
	DefaultTmpBytes = 256 << 20
	// DefaultWorkspaceBytes is the quota of the scope's private workspace
	// (workspaceAccess none and ro): a command does not start while the
	// workspace holds more, and is stopped when it fills it past that
	// (see Guard).
	DefaultWorkspaceBytes = 1 << 30
)

// cgroupRoot is where the cgroup file systems are mounted.
var cgroupRoot = "/sys/fs/cgroup"

// pidsGroupName is the cgroup, under the gateway's own pids cgroup, that
// holds one child cgroup per sandboxed command, named by its pid.
const pidsGroupName = "switchboard-sandbox"

// pidsBound is how commands' process counts are bounded here, found once.
var pidsBound struct {
	once sync.Once
	// dir is the pids cgroup under which each command gets its own with
	// pids.max; "" when none is writable.
	dir string
	err error
}

// procBound returns the pids cgroup directory commands are put under, or
// "" when RLIMIT_NPROC binds by itself (the gateway is not root, whose
// processes the kernel exempts from it). As root without a writable pids
// cgroup the processes of a sandbox cannot be bounded and it fails.
func procBound() (string, error) {
	pidsBound.once.Do(func() {
		dir, err := pidsCgroup()
		pidsBound.dir, pidsBound.err = chooseBound(dir, err, os.Geteuid())
	})
	return pidsBound.dir, pidsBound.err
}

// chooseBound decides procBound from what pidsCgroup found (dir, or
// cgErr) and the gateway's effective uid.
func chooseBound(dir string, cgErr error, euid int) (string, error) {
	switch {
	case cgErr == nil:
		return dir, nil
	case euid != 0:
		return "", nil // RLIMIT_NPROC (prlimit --nproc) binds for other users
	}
	return "", fmt.Errorf("sandbox unavailable: the gateway runs as root, whose processes RLIMIT_NPROC does not bound, and no pids cgroup is writable (%v); "+
		"run the gateway as an unprivileged user, or give it a writable cgroup v1 pids hierarchy or cgroup v2 with the pids controller", cgErr)
}

// pidsCgroup finds or makes the switchboard-sandbox cgroup under the
// gateway's own pids cgroup: cgroup v1's pids hierarchy, or cgroup v2
// when the gateway sits in its root cgroup with the pids controller
// available.
func pidsCgroup() (string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	defer f.Close()
	var v1, v2 string
	hasV2 := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2, hasV2 = parts[2], true
		case containsWord(parts[1], "pids"):
			v1 = parts[2]
		}
	}
	var tried []string
	if v1 != "" {
		dir, err := makePidsGroup(filepath.Join(cgroupRoot, "pids", v1), false)
		if err == nil {
			return dir, nil
		}
		tried = append(tried, "v1: "+err.Error())
	}
	if hasV2 {
		for _, mnt := range []string{cgroupRoot, filepath.Join(cgroupRoot, "unified")} {
			if _, err := os.Stat(filepath.Join(mnt, "cgroup.controllers")); err != nil {
				continue
			}
			if v2 != "/" {
				tried = append(tried, "v2: the gateway is not in the root cgroup, so it cannot delegate pids to children of its own")
				break
			}
			dir, err := makePidsGroup(mnt, true)
			if err == nil {
				return dir, nil
			}
			tried = append(tried, "v2: "+err.Error())
			break
		}
	}
	if len(tried) == 0 {
		return "", errors.New("no pids cgroup mounted")
	}
	return "", errors.New(strings.Join(tried, "; "))
}

// makePidsGroup makes parent/switchboard-sandbox and checks that a child
// of it gets pids.max (for v2, enabling the pids controller on the way).
func makePidsGroup(parent string, v2 bool) (string, error) {
	if v2 {
		b, err := os.ReadFile(filepath.Join(parent, "cgroup.controllers"))
		if err != nil {
			return "", err
		}
		if !containsWord(strings.ReplaceAll(string(b), "\n", ""), "pids") {
			return "", fmt.Errorf("pids controller not available in %s", parent)
		}
		if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+pids"), 0); err != nil {
			return "", err
		}
	}
	dir := filepath.Join(parent, pidsGroupName)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	if v2 {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+pids"), 0); err != nil {
			return "", err
		}
	}
	probe := filepath.Join(dir, "probe-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	defer os.Remove(probe)
	if err := os.WriteFile(filepath.Join(probe, "pids.max"), []byte("1"), 0); err != nil {
		return "", err
	}
	return dir, nil
}

// containsWord reports whether the comma- or space-separated list s has w.
func containsWord(s, w string) bool {
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		if f == w {
			return true
		}
	}
	return false
}

// joinPidsScript runs as the sandboxed command's first process, before
// bwrap: it makes $1/$$, sets its pids.max to $2, moves itself in and
// becomes bwrap, so that every process of the sandbox is counted from
// the start. It fails closed (exit 125) when any step fails.
const joinPidsScript = `cg="$1/$$"; max="$2"; shift 2
if ! { mkdir "$cg" && echo "$max" > "$cg/pids.max" && echo $$ > "$cg/cgroup.procs"; } 2>/dev/null; then
  echo "sandbox: cannot bound the command's processes (cgroup $cg)" >&2; exit 125
fi
exec "$@"`

// sweepPidsGroups removes the per-command cgroups under dir whose
// process is gone (rmdir fails on one still in use, so a live one stays).
func sweepPidsGroups(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil || !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join("/proc", e.Name())); err == nil {
			continue
		}
		_ = os.Remove(filepath.Join(dir, e.Name()))
	}
}

// workspaceUsage is what the regular files of the scope's private
// workspace dir hold, in bytes.
func workspaceUsage(dir string) (int64, error) {
	var used int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished meanwhile
		}
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
			used += fi.Size()
		}
		return nil
	})
	return used, err
}

// ProcessBound says how the processes of a sandbox are bounded here (a
// pids cgroup, RLIMIT_NPROC, or nothing and why), for explain and doctor.
func ProcessBound() string {
	dir, err := procBound()
	switch {
	case err != nil:
		return "nothing (" + err.Error() + ")"
	case dir != "":
		return "pids cgroup " + dir + " (pids.max per command) and RLIMIT_NPROC"
	}
	return "RLIMIT_NPROC (the gateway is not root)"
}
