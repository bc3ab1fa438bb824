//go:build !linux

package sandbox

import "fmt"

// quotaWatch, without inotify, only refuses a command while the workspace
// is over its quota; the file size limit is the rest of the bound.
type quotaWatch struct{}

func newQuotaWatch(dir string, quota int64) (*quotaWatch, error) {
	used, err := workspaceUsage(dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: scope workspace: %w", err)
	}
	if used > quota {
		return nil, overQuota(dir, used, quota)
	}
	return &quotaWatch{}, nil
}

func (*quotaWatch) start(func()) {}

func killFirstInCgroup(_ int, kill func()) func() { return kill }

func (*quotaWatch) stop() string { return "" }
