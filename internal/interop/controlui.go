package interop

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// ControlUIDir returns the reference's Control UI static build
// (dist/control-ui of npm openclaw, installed by scripts/npm-setup.sh). It
// skips the test when the npm cache lacks it (fails the test under CI=true).
func ControlUIDir(t testing.TB) string {
	t.Helper()
	dir, err := controlUIDir()
	if errors.Is(err, errNoCache) {
		skipOrFatal(t, err)
	} else if err != nil {
		t.Fatal(err)
	}
	return dir
}

func controlUIDir() (string, error) {
	cache, err := NPMCache()
	if err != nil {
		return "", err
	}
	pkg := filepath.Join(cache, "openclaw", "node_modules", openclawPackage)
	data, err := os.ReadFile(filepath.Join(pkg, "package.json"))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s@%s not found in %s: %w", openclawPackage, openclawVersion, cache, errNoCache)
	}
	if err != nil {
		return "", err
	}
	var meta struct{ Version string }
	if err := json.Unmarshal(data, &meta); err != nil {
		return "", fmt.Errorf("%s/package.json: %w", pkg, err)
	}
	if meta.Version != openclawVersion {
		return "", fmt.Errorf("%s in %s is %s, want %s: %w", openclawPackage, cache, meta.Version, openclawVersion, errNoCache)
	}
	dir := filepath.Join(pkg, "dist", "control-ui")
	if _, err := os.Stat(filepath.Join(dir, "index.html")); err != nil {
		return "", fmt.Errorf("%s@%s has no dist/control-ui: %v: %w", openclawPackage, openclawVersion, err, errNoCache)
	}
	return dir, nil
}
