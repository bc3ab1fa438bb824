package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestHeapProfileAtStop: the daemon's context ends only after the heap
// profile is on disk, so a profile shows the heap of the running gateway,
// not of one that has shut down.
func TestHeapProfileAtStop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heap.prof")
	outer, cancel := context.WithCancel(context.Background())
	ctx, stop := heapProfileAtStop(outer, path)
	defer stop()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("profile written before the stop signal (stat: %v)", err)
	}
	cancel()
	<-ctx.Done()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no profile when the daemon's context ended: %v", err)
	}
	if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		t.Fatalf("profile is not a gzipped pprof profile: % x", b[:min(len(b), 8)])
	}
}

// TestHeapProfileAtStopUnused: ending the serve call without a stop
// signal writes nothing.
func TestHeapProfileAtStopUnused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heap.prof")
	outer, cancel := context.WithCancel(context.Background())
	ctx, stop := heapProfileAtStop(outer, path)
	stop()
	<-ctx.Done()
	cancel()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("profile written without a stop signal (stat: %v)", err)
	}
}

// TestMemProfileRate: allocations are sampled only for the heap profile
// knob.
func TestMemProfileRate(t *testing.T) {
	if got := memProfileRate(""); got != 0 {
		t.Errorf("rate without SWITCHBOARD_MEMPROFILE: %d, want 0", got)
	}
	if got := memProfileRate("/tmp/heap.prof"); got != 4096 {
		t.Errorf("rate with SWITCHBOARD_MEMPROFILE: %d, want 4096", got)
	}
}
