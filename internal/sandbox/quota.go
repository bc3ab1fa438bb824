package sandbox

import (
	"fmt"
	"path/filepath"
)

// The scope's private workspace quota holds while a command runs: the
// command's RLIMIT_FSIZE is at most what is left of the quota when it
// starts (no single file passes it), and a watcher follows every write in
// the workspace tree through inotify, keeping each file's size, and stops
// the command as soon as the files together pass the quota. How far over
// a command gets is what it writes between the write that crosses the
// quota and the kill: the watcher wakes on that write's event, stats the
// files written since its last wake-up and confirms with one walk of the
// tree before it kills, so the slack is what the command writes during
// that walk and the scheduling delay, not a figure of the configuration.
// Without inotify (other systems than Linux) only the check before the
// command and the file size limit hold.

// Guard prepares the bound of one command that writes to the scope's
// private workspace (access none and ro) while it runs. It refuses, as
// Command does, while the workspace is over its quota. start begins the
// watch once the command runs, with the command's process id on the host
// (0 when it has none there) and the function that kills the command and
// everything it started; stop, called once the command ended (or
// failed to start), ends the watch and returns why it stopped the
// command ("" when it did not). Without a private workspace start and
// stop do nothing. Both backends use it: bubblewrap binds the workspace
// at its own path, Docker at docker.workdir, and the files are the
// host's either way.
func (s Spec) Guard() (start func(pid int, kill func()), stop func() string, err error) {
	n := s.Normalized()
	if n.ScopeDir == "" || n.WorkspaceAccess == AccessRW {
		return func(int, func()) {}, func() string { return "" }, nil
	}
	w, err := newQuotaWatch(filepath.Clean(n.ScopeDir), n.Limits.WorkspaceBytes)
	if err != nil {
		return nil, nil, err
	}
	start = func(pid int, kill func()) { w.start(killFirstInCgroup(pid, kill)) }
	return start, w.stop, nil
}

// overQuota is the refusal of a command while dir holds used bytes.
func overQuota(dir string, used, quota int64) error {
	return fmt.Errorf("sandbox: the sandbox workspace %s holds %d bytes, over its quota of %d bytes; remove files from it before running more commands", dir, used, quota)
}

// explainQuota describes the quota of the scope's private workspace of
// s (normalized), for Explain; "" when it has none.
func (s Spec) explainQuota() string {
	if s.ScopeDir == "" || s.WorkspaceAccess == AccessRW {
		return ""
	}
	return fmt.Sprintf("sandbox workspace quota %d bytes (no command starts over it; a command's file size limit is what is left of it, "+
		"and a watcher kills the command once the workspace passes it: it gets past by what it writes before the watcher reacts, milliseconds on an idle host)", s.Limits.WorkspaceBytes)
}
