package daemon

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkStart measures Start (config, store, runner, gateway listening,
// ready) to Close, on a fresh state dir and on one a previous start left:
// the daemon's own share of the cold start (`bench/gateway` adds the
// process exec and the Go runtime's start). Profile it with -cpuprofile.
func BenchmarkStart(b *testing.B) {
	for _, existing := range []bool{false, true} {
		b.Run(fmt.Sprintf("existing=%v", existing), func(b *testing.B) {
			root := b.TempDir()
			if existing {
				startDaemon(b, filepath.Join(root, "state")).Close()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				dir := filepath.Join(root, "state")
				if !existing {
					dir = filepath.Join(root, fmt.Sprint("fresh", i))
				}
				startDaemon(b, dir).Close()
			}
		})
	}
}
