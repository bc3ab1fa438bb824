package daemon

import (
	"context"
	"net"
	"time"

	"github.com/switchboardhq/switchboard/internal/metrics"
	"github.com/switchboardhq/switchboard/internal/reload"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
)

// DefaultReloadPoll is how often Serve looks at the config file.
const DefaultReloadPoll = time.Second

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
		base := reload.ReadSum(path)
		d, err := Start(ctx, opts)
		if err != nil {
			if restarting && ctx.Err() != nil {
				return nil // stopped while restarting: a clean shutdown
			}
			return err
		}
		poll := opts.ReloadPoll
		if poll <= 0 {
			poll = DefaultReloadPoll
		}
		w := reload.Watcher{Path: path, ConfigPath: opts.ConfigPath, Env: env, Poll: poll, Idle: d.idle, Log: d.log}
		restart := w.Wait(ctx, base)
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
