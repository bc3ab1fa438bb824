package daemon

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard/internal/statedir"
)

// readinessInterval is how often the state dir is probed for writes.
const readinessInterval = 2 * time.Second

// readiness tracks what keeps the gateway from taking work: a state dir
// that cannot be written (read-only, full, or gone), or a PostgreSQL
// database that does not answer. /readyz reports
// it, and it clears by itself when the directory is writable again.
type readiness struct {
	dir   string
	probe func(dir string) error // nil means statedir.ProbeWritable
	// ping checks that the database answers; nil for a local file.
	ping func(context.Context) error

	mu      sync.Mutex // guards failing
	failing []string
}

// check probes once and records the outcome; it reports the failures.
func (r *readiness) check() []string {
	probe := r.probe
	if probe == nil {
		probe = statedir.ProbeWritable
	}
	var failing []string
	if err := probe(r.dir); err != nil {
		failing = append(failing, fmt.Sprintf("state dir not writable: %v", err))
	}
	if r.ping != nil {
		ctx, cancel := context.WithTimeout(context.Background(), readinessInterval)
		err := r.ping(ctx)
		cancel()
		if err != nil {
			failing = append(failing, fmt.Sprintf("database unreachable: %v", err))
		}
	}
	r.mu.Lock()
	r.failing = failing
	r.mu.Unlock()
	return failing
}

// Failing returns the current reasons the gateway is not ready.
func (r *readiness) Failing() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string{}, r.failing...)
}

// loop probes until ctx ends, logging each change once.
func (d *Daemon) readinessLoop(ctx context.Context) {
	t := time.NewTicker(readinessInterval)
	defer t.Stop()
	was := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		failing := d.readiness.check()
		switch {
		case len(failing) > 0 && was == 0:
			d.log.Error("not ready", "failing", failing)
		case len(failing) == 0 && was > 0:
			d.log.Info("ready again")
		}
		was = len(failing)
	}
}

// ready serves /readyz: 200 with {"ready":true} or 503 with the reasons.
func (d *Daemon) ready(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	failing := d.readiness.Failing()
	if len(failing) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	b, _ := jsonMarshal(map[string]any{"ready": len(failing) == 0, "failing": failing, "uptimeMs": time.Since(d.started).Milliseconds()})
	w.Write(append(b, '\n'))
}
