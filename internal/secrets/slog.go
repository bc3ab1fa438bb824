package secrets

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
)

// maskingHandler masks the configured secret values in every record it
// passes on: the message and every attribute's text (strings, errors,
// anything formatted), in groups too. Attribute names that look like a
// secret are redacted by name besides (the daemon's log setup); this catches the
// value wherever it appears, such as a provider's error that echoes a key.
type maskingHandler struct {
	next slog.Handler
	ref  *Ref
}

// Ref holds the masker of a gateway's logger: the gateway token it may
// generate at start is added once it exists (Set), after the logger was
// made. The zero Ref masks nothing.
type Ref struct {
	p atomic.Pointer[Masker]
}

// Set makes m the masker of every handler made with the ref.
func (r *Ref) Set(m *Masker) { r.p.Store(m) }

// Get returns the masker of the moment (nil: none yet).
func (r *Ref) Get() *Masker { return r.p.Load() }

// NewLogHandler returns a handler that masks ref's secret values in every
// record before next sees it.
func NewLogHandler(next slog.Handler, ref *Ref) slog.Handler {
	return &maskingHandler{next: next, ref: ref}
}

func (h *maskingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *maskingHandler) Handle(ctx context.Context, r slog.Record) error {
	m := h.ref.Get()
	if m == nil || !needsMask(m, r) {
		return h.next.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, m.String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(maskAttr(m, a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// needsMask reports whether the record may hold a secret value: its
// message or a string holds one, or an attribute's text is only known once
// formatted (any other value, or a group). Most records (a run's start and
// end) hold strings and numbers without one and go on as they are, with
// no copy.
func needsMask(m *Masker, r slog.Record) bool {
	if m.Contains(r.Message) {
		return true
	}
	found := false
	r.Attrs(func(a slog.Attr) bool {
		switch a.Value.Kind() {
		case slog.KindString:
			found = m.Contains(a.Value.String())
		case slog.KindInt64, slog.KindUint64, slog.KindFloat64, slog.KindBool, slog.KindDuration, slog.KindTime:
		default:
			found = true
		}
		return !found
	})
	return found
}

// WithAttrs masks the attributes with the masker of the moment: attributes
// bound before a generated token exists cannot hold it.
func (h *maskingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	m := h.ref.Get()
	masked := make([]slog.Attr, len(as))
	for i, a := range as {
		masked[i] = a
		if m != nil {
			masked[i] = maskAttr(m, a)
		}
	}
	return &maskingHandler{next: h.next.WithAttrs(masked), ref: h.ref}
}

func (h *maskingHandler) WithGroup(name string) slog.Handler {
	return &maskingHandler{next: h.next.WithGroup(name), ref: h.ref}
}

// maskAttr masks one attribute's value.
func maskAttr(m *Masker, a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, m.String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		masked := make([]any, len(g))
		for i, x := range g {
			masked[i] = maskAttr(m, x)
		}
		return slog.Group(a.Key, masked...)
	case slog.KindAny:
		var text string
		switch x := v.Any().(type) {
		case error:
			text = x.Error()
		case fmt.Stringer:
			text = x.String()
		default:
			text = fmt.Sprint(x)
		}
		if m.Contains(text) {
			return slog.String(a.Key, m.String(text))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// Func returns m's String, or nil when m masks nothing (a caller then
// skips masking).
func (m *Masker) Func() func(string) string {
	if m == nil {
		return nil
	}
	return m.String
}
