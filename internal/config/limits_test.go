package config

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A hostile config nested 100k levels deep (600 KB) is refused with a
// clear error, in memory linear in its size (it once took 24 GB).
func TestDeepConfigRefusedCheaply(t *testing.T) {
	const n = 100_000
	data := []byte("{" + strings.Repeat("a:{", n) + strings.Repeat("}", n) + "}")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, err := Parse("deep.json5", data, nil)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "at most 64 levels are allowed") {
		t.Fatalf("Parse(deep) = %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(16*len(data)) {
		t.Errorf("refusing a %d-byte config allocated %d bytes; want at most 16x its size", len(data), alloc)
	}
}

func TestOversizedConfigRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "switchboard.json5")
	big := "{ // " + strings.Repeat("x", MaxFileBytes) + "\n}"
	if err := os.WriteFile(path, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := LoadEnv(path, MapEnv(map[string]string{EnvStateDir: dir}))
	if err == nil || !strings.Contains(err.Error(), "a config file may have at most") {
		t.Fatalf("LoadEnv(big) = %v", err)
	}
	if _, _, err := Parse("big.json5", []byte(big), nil); err == nil || !strings.Contains(err.Error(), "at most 4194304 are allowed") {
		t.Fatalf("Parse(big) = %v", err)
	}
}
