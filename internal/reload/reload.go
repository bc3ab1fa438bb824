// Package reload watches a running gateway's config file and decides when
// a change is applied: a change that parses and validates restarts the
// gateway in place once no run is running (the reference's default
// "hybrid" reload), an invalid one is logged and skipped.
package reload

import (
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/switchboardhq/switchboard/internal/settings"
)

// MaxDefer bounds how long a config change waits for running runs to end
// before the gateway restarts anyway (they then get the shutdown grace,
// as on SIGTERM).
const MaxDefer = 5 * time.Minute

// Sum identifies a config file's content; the zero value is a missing
// file.
type Sum struct {
	present bool
	sum     [sha256.Size]byte
}

// ReadSum reads path's Sum. A file that cannot be read counts as changed
// content (its load then reports why).
func ReadSum(path string) Sum {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Sum{}
	}
	if err != nil {
		b = []byte("\x00unreadable: " + err.Error())
	}
	return Sum{present: true, sum: sha256.Sum256(b)}
}

// Watcher watches a running gateway's config file.
type Watcher struct {
	// Path is the file; ConfigPath and Env are what the gateway loaded
	// it with (settings.Load).
	Path       string
	ConfigPath string
	Env        settings.Env
	// Poll is how often the file is read.
	Poll time.Duration
	// Idle reports whether no run is running.
	Idle func(context.Context) bool
	Log  *slog.Logger
}

// Wait polls the config file until ctx ends (false) or a valid changed
// config is to be applied by a restart (true): once no run is running,
// or MaxDefer after the change. A change counts once the file reads the
// same twice in a row, so an editor's write-and-rename is seen whole. An
// invalid change is logged and skipped; with gateway.reload.mode "off" a
// valid one is only logged.
func (w Watcher) Wait(ctx context.Context, base Sum) bool {
	path := w.Path
	t := time.NewTicker(w.Poll)
	defer t.Stop()
	seen := base
	var pendingSince time.Time // set while a valid change waits for runs to end
	deferNoted := false        // the wait has been logged
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		cur := ReadSum(path)
		if cur != seen {
			seen = cur // settling: look again next tick
			continue
		}
		if cur != base {
			base, pendingSince, deferNoted = cur, time.Time{}, false
			set, warnings, err := settings.Load(w.ConfigPath, w.Env)
			if err != nil {
				w.Log.Warn("config reload skipped (invalid config); the gateway keeps its current config", "file", path, "err", err)
				continue
			}
			for _, warn := range warnings {
				w.Log.Warn("config: " + warn.String())
			}
			if set.ReloadMode == settings.ReloadOff {
				w.Log.Info("config changed; gateway.reload.mode is \"off\": restart the gateway to apply it", "file", path)
				continue
			}
			pendingSince = time.Now()
		}
		if pendingSince.IsZero() {
			continue
		}
		if w.Idle(ctx) || time.Since(pendingSince) > MaxDefer {
			w.Log.Info("config changed: restarting the gateway to apply it", "file", path)
			return true
		}
		if !deferNoted {
			deferNoted = true
			w.Log.Info("config changed: the gateway restarts to apply it when its running runs end", "file", path)
		}
	}
}
