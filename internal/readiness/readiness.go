// Package readiness tracks what keeps the gateway from taking work — a
// state dir that cannot be written, a database that does not answer — and
// serves it as /readyz.
package readiness

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard/internal/statedir"
)

// Interval is how often the state dir is probed for writes.
const Interval = 2 * time.Second

// Tracker tracks what keeps the gateway from taking work: a state dir
// that cannot be written (read-only, full, or gone), or a PostgreSQL
// database that does not answer. /readyz reports
// it, and it clears by itself when the directory is writable again.
type Tracker struct {
	// Dir is the state dir; Probe checks it takes writes (nil means
	// statedir.ProbeWritable).
	Dir   string
	Probe func(dir string) error
	// Ping checks that the database answers; nil for a local file.
	Ping func(context.Context) error

	mu      sync.Mutex // guards failing
	failing []string
}

// Check probes once and records the outcome; it reports the failures.
func (r *Tracker) Check() []string {
	probe := r.Probe
	if probe == nil {
		probe = statedir.ProbeWritable
	}
	var failing []string
	if err := probe(r.Dir); err != nil {
		failing = append(failing, fmt.Sprintf("state dir not writable: %v", err))
	}
	if r.Ping != nil {
		ctx, cancel := context.WithTimeout(context.Background(), Interval)
		err := r.Ping(ctx)
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
func (r *Tracker) Failing() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string{}, r.failing...)
}

// Loop probes until ctx ends, logging each change once.
func (r *Tracker) Loop(ctx context.Context, log *slog.Logger) {
	t := time.NewTicker(Interval)
	defer t.Stop()
	was := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		failing := r.Check()
		switch {
		case len(failing) > 0 && was == 0:
			log.Error("not ready", "failing", failing)
		case len(failing) == 0 && was > 0:
			log.Info("ready again")
		}
		was = len(failing)
	}
}

// Handler serves /readyz: 200 with {"ready":true} or 503 with the
// reasons, and the time since started.
func (r *Tracker) Handler(started time.Time) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		failing := r.Failing()
		if len(failing) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		b, _ := json.Marshal(map[string]any{"ready": len(failing) == 0, "failing": failing, "uptimeMs": time.Since(started).Milliseconds()})
		w.Write(append(b, '\n'))
	}
}
