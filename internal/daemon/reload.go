package daemon

import (
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"net"
	"os"
	"time"

	"github.com/switchboardhq/switchboard/internal/metrics"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
)

// DefaultReloadPoll is how often Serve looks at the config file.
const DefaultReloadPoll = time.Second

// reloadMaxDefer bounds how long a config change waits for running runs
// to end before the gateway restarts anyway (they then get the shutdown
// grace, as on SIGTERM).
const reloadMaxDefer = 5 * time.Minute

// Serve runs the gateway until ctx ends, then shuts down gracefully. It
// returns nil on a clean shutdown.
//
// While it runs it watches the config file. A change that parses and
// validates is applied by restarting the gateway in place (same process,
// same port when it picked a free one) once no run is running, as the
// reference's default "hybrid" reload does; an invalid one is logged and
// skipped, the running gateway keeping its config. With
// gateway.reload.mode "off" a valid change is only logged.
func Serve(ctx context.Context, opts Options) error {
	env := opts.Env
	if env == nil {
		env = settings.OSEnv
	}
	if opts.counters == nil {
		// One set for the process: a reload does not reset them.
		opts.counters = metrics.NewCounters()
	}
	for restarting := false; ; restarting = true {
		path, err := configPath(opts, env)
		if err != nil {
			return err
		}
		base := readConfigSum(path)
		d, err := Start(ctx, opts)
		if err != nil {
			if restarting && ctx.Err() != nil {
				return nil // stopped while restarting: a clean shutdown
			}
			return err
		}
		restart := d.watchConfig(ctx, opts, env, path, base)
		closeErr := d.Close()
		if !restart {
			return closeErr
		}
		if closeErr != nil {
			d.log.Warn("config reload: the old gateway did not close cleanly", "err", closeErr)
		}
		opts = keepPort(opts, d.Addrs)
	}
}

// configPath is the config file Start reads for opts.
func configPath(opts Options, env settings.Env) (string, error) {
	if opts.ConfigPath != "" {
		return opts.ConfigPath, nil
	}
	p, err := settings.ResolvePaths(env)
	if err != nil {
		return "", err
	}
	return p.ConfigPath, nil
}

// configSum identifies a config file's content; the zero value is a
// missing file.
type configSum struct {
	present bool
	sum     [sha256.Size]byte
}

// readConfigSum reads path's configSum. A file that cannot be read counts
// as changed content (its load then reports why).
func readConfigSum(path string) configSum {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return configSum{}
	}
	if err != nil {
		b = []byte("\x00unreadable: " + err.Error())
	}
	return configSum{present: true, sum: sha256.Sum256(b)}
}

// watchConfig polls the config file until ctx ends (false) or a valid
// changed config is to be applied by a restart (true). A change counts
// once the file reads the same twice in a row, so an editor's
// write-and-rename is seen whole.
func (d *Daemon) watchConfig(ctx context.Context, opts Options, env settings.Env, path string, base configSum) bool {
	poll := opts.ReloadPoll
	if poll <= 0 {
		poll = DefaultReloadPoll
	}
	t := time.NewTicker(poll)
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
		cur := readConfigSum(path)
		if cur != seen {
			seen = cur // settling: look again next tick
			continue
		}
		if cur != base {
			base, pendingSince, deferNoted = cur, time.Time{}, false
			set, warnings, err := settings.Load(opts.ConfigPath, env)
			if err != nil {
				d.log.Warn("config reload skipped (invalid config); the gateway keeps its current config", "file", path, "err", err)
				continue
			}
			for _, w := range warnings {
				d.log.Warn("config: " + w.String())
			}
			if set.ReloadMode == settings.ReloadOff {
				d.log.Info("config changed; gateway.reload.mode is \"off\": restart the gateway to apply it", "file", path)
				continue
			}
			pendingSince = time.Now()
		}
		if pendingSince.IsZero() {
			continue
		}
		if d.idle(ctx) || time.Since(pendingSince) > reloadMaxDefer {
			d.log.Info("config changed: restarting the gateway to apply it", "file", path)
			return true
		}
		if !deferNoted {
			deferNoted = true
			d.log.Info("config changed: the gateway restarts to apply it when its running runs end", "file", path)
		}
	}
}

// idle reports whether no run is running (an error counts as busy).
func (d *Daemon) idle(ctx context.Context) bool {
	runs, err := d.Store.ListRuns(ctx, store.RunFilter{Statuses: []store.RunStatus{store.RunRunning}})
	return err == nil && len(runs) == 0
}

// keepPort pins a free port picked at start (Port 0) to the one the
// gateway got, so clients reconnect to the same address after a reload.
func keepPort(opts Options, addrs []net.Addr) Options {
	if opts.Port == nil || *opts.Port != 0 {
		return opts
	}
	for _, a := range addrs {
		if ta, ok := a.(*net.TCPAddr); ok && ta.Port != 0 {
			p := ta.Port
			opts.Port = &p
			return opts
		}
	}
	return opts
}
