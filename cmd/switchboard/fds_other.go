//go:build !unix

package main

// cloexecInherited has nothing to do where descriptors are not inherited
// across exec.
func cloexecInherited() error { return nil }
