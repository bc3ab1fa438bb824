package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultPruneEvery is how often the pruner sweeps when not told.
const DefaultPruneEvery = 5 * time.Minute

// Prune removes the scope containers of the daemon (this gateway's and
// any other's, found by label) unused for longer than idle or created
// longer than maxAge ago; a zero duration disables its rule. The last use
// of a container is when a command of this process last ran in it, else
// its creation or this backend's start, whichever is later. A container running a command, or being set up, stays.
// It returns the ids removed.
func (d *Docker) Prune(ctx context.Context, idle, maxAge time.Duration) ([]string, error) {
	if idle <= 0 && maxAge <= 0 {
		return nil, nil
	}
	cli, err := d.client()
	if err != nil {
		return nil, err
	}
	found, err := d.list(ctx, cli)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var removed []string
	var errs []error
	for _, c := range found {
		created := time.Unix(c.Created, 0)
		st := d.scope(c.Labels[labelKey])
		// A scope being found, made or set up is in use.
		if !st.mu.TryLock() {
			continue
		}
		busy, last := d.usage(c.ID)
		if last.IsZero() {
			last = created
			if d.born.After(last) {
				last = d.born
			}
		}
		if busy == 0 && ((idle > 0 && now.Sub(last) > idle) || (maxAge > 0 && now.Sub(created) > maxAge)) {
			if err := d.removeContainer(cli, c.ID); err != nil {
				errs = append(errs, err)
			} else {
				d.forget(st, c.ID)
				removed = append(removed, c.ID)
			}
		}
		st.mu.Unlock()
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("sandbox: prune: %w", err)
	}
	return removed, nil
}

// pruner is the background sweep StartPruner starts.
type pruner struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// StartPruner sweeps with Prune(idle, maxAge) now and then every every
// (≤ 0 means DefaultPruneEvery), until Close; report, when not nil, hears
// each sweep that removed something or failed. It replaces a pruner
// already running, and starts none when both rules are disabled.
func (d *Docker) StartPruner(idle, maxAge, every time.Duration, report func(removed []string, err error)) {
	if idle <= 0 && maxAge <= 0 {
		d.stopPruner()
		return
	}
	if every <= 0 {
		every = DefaultPruneEvery
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &pruner{cancel: cancel, done: make(chan struct{})}
	d.mu.Lock()
	old := d.pruner
	d.pruner = p
	d.mu.Unlock()
	if old != nil {
		old.stop()
	}
	go func() {
		defer close(p.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			removed, err := d.Prune(ctx, idle, maxAge)
			if report != nil && ctx.Err() == nil && (len(removed) > 0 || err != nil) {
				report(removed, err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// stopPruner stops the pruner, if one runs, and waits for it.
func (d *Docker) stopPruner() {
	d.mu.Lock()
	p := d.pruner
	d.pruner = nil
	d.mu.Unlock()
	if p != nil {
		p.stop()
	}
}

// stop ends the sweep and waits for it.
func (p *pruner) stop() {
	p.cancel()
	<-p.done
}
