// Package eventhooks owns Switchboard's internal event hooks: operator
// commands run when the gateway emits a lifecycle event (the reference's
// hooks.internal, whose handlers are JavaScript; here each handler is a
// shell command). A handler gets the event as JSON on stdin and in
// SWITCHBOARD_HOOK_EVENT; it runs with a timeout, its output is logged,
// and its failure never fails what fired it. Handlers of an event run one
// after another and are awaited: session:compact:before runs before the
// compaction starts. Only the daemon imports it.
package eventhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// Events Switchboard fires.
const (
	CompactBefore = "session:compact:before"
	CompactAfter  = "session:compact:after"
	CommandNew    = "command:new"
	CommandReset  = "command:reset"
	Startup       = "gateway:startup"
)

// Known lists every event a handler may name.
var Known = []string{CompactBefore, CompactAfter, CommandNew, CommandReset, Startup}

// DefaultTimeout bounds one handler run.
const DefaultTimeout = 10 * time.Second

// maxOutput bounds the handler output kept for the log.
const maxOutput = 4096

// Handler is one configured hook.
type Handler struct {
	Name string
	// Events are the events it runs on; a prefix ending at a colon
	// ("session", "session:compact", "command") matches all of its events.
	Events []string
	// Command runs with /bin/sh -c.
	Command string
	Timeout time.Duration
	// Env adds variables to its environment.
	Env map[string]string
}

// matches reports whether h runs on event.
func (h Handler) matches(event string) bool {
	return slices.ContainsFunc(h.Events, func(e string) bool { return e == event || strings.HasPrefix(event, e+":") })
}

// Dispatcher runs the handlers. The zero value and a nil *Dispatcher run
// nothing.
type Dispatcher struct {
	handlers []Handler
	log      *slog.Logger
	now      func() time.Time
}

// New returns a dispatcher over handlers.
func New(handlers []Handler, log *slog.Logger) *Dispatcher {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Dispatcher{handlers: handlers, log: log.With("component", "eventhooks"), now: time.Now}
}

// Fire runs every handler of event, one after another, and returns when
// they are done (or ctx ends). data is the event's payload; the handler
// gets {type, action, event, timestamp, ...data} as JSON.
func (d *Dispatcher) Fire(ctx context.Context, event string, data map[string]any) {
	if d == nil {
		return
	}
	var hs []Handler
	for _, h := range d.handlers {
		if h.matches(event) {
			hs = append(hs, h)
		}
	}
	if len(hs) == 0 {
		return
	}
	typ, action, _ := strings.Cut(event, ":")
	payload := map[string]any{"type": typ, "action": action, "event": event, "timestamp": d.now().UTC().Format(time.RFC3339Nano)}
	for k, v := range data {
		payload[k] = v
	}
	body, err := json.Marshal(payload)
	if err != nil {
		d.log.Warn("event hook payload not encoded", "event", event, "err", err)
		return
	}
	for _, h := range hs {
		if ctx.Err() != nil {
			return
		}
		d.run(ctx, h, event, body)
	}
}

// run runs one handler and logs how it went.
func (d *Dispatcher) run(ctx context.Context, h Handler, event string, body []byte) {
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", h.Command)
	cmd.Stdin = bytes.NewReader(body)
	cmd.Env = append(os.Environ(), "SWITCHBOARD_HOOK_EVENT="+string(body), "SWITCHBOARD_HOOK_NAME="+h.Name)
	for k, v := range h.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &limited{&out}, &limited{&out}
	cmd.WaitDelay = time.Second
	start := time.Now()
	err := cmd.Run()
	attrs := []any{"hook", h.Name, "event", event, "durationMs", time.Since(start).Milliseconds()}
	if s := strings.TrimSpace(out.String()); s != "" {
		attrs = append(attrs, "output", s)
	}
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		d.log.Warn("event hook timed out", append(attrs, "timeout", timeout.String())...)
	case err != nil:
		d.log.Warn("event hook failed", append(attrs, "err", err)...)
	default:
		d.log.Info("event hook ran", attrs...)
	}
}

// limited keeps at most maxOutput bytes and discards the rest.
type limited struct{ b *bytes.Buffer }

func (l *limited) Write(p []byte) (int, error) {
	if room := maxOutput - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// Validate checks a handler's configuration.
func Validate(h Handler) error {
	if strings.TrimSpace(h.Command) == "" {
		return fmt.Errorf("hook %q: command required", h.Name)
	}
	if len(h.Events) == 0 {
		return fmt.Errorf("hook %q: events required", h.Name)
	}
	for _, e := range h.Events {
		if !slices.Contains(Known, e) && !slices.ContainsFunc(Known, func(k string) bool { return strings.HasPrefix(k, e+":") }) {
			return fmt.Errorf("hook %q: unknown event %q (known: %s)", h.Name, e, strings.Join(Known, ", "))
		}
	}
	return nil
}
