//go:build unix && !linux

package main

// cloexecInherited marks every descriptor above 2 close-on-exec, so that
// what the process inherited from its launcher reaches no command it runs.
func cloexecInherited() error { return cloexecListed("/dev/fd") }
