package daemon

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync/atomic"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/secrets"
)

// maskingHandler masks the configured secret values in every record it
// passes on: the message and every attribute's text (strings, errors,
// anything formatted), in groups too. Attribute names that look like a
// secret are redacted by name besides (redactSecrets); this catches the
// value wherever it appears, such as a provider's error that echoes a key.
type maskingHandler struct {
	next slog.Handler
	ref  *maskRef
}

// maskRef holds the masker of a gateway's logger: the gateway token it
// may generate at start is added once it exists (Set), after the logger
// was made.
type maskRef struct {
	p atomic.Pointer[secrets.Masker]
}

// Set makes m the masker of every handler made with the ref.
func (r *maskRef) Set(m *secrets.Masker) { r.p.Store(m) }

func (r *maskRef) get() *secrets.Masker { return r.p.Load() }

func newMaskingHandler(next slog.Handler, ref *maskRef) slog.Handler {
	return &maskingHandler{next: next, ref: ref}
}

func (h *maskingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *maskingHandler) Handle(ctx context.Context, r slog.Record) error {
	m := h.ref.get()
	if m == nil {
		return h.next.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, m.String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(maskAttr(m, a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs masks the attributes with the masker of the moment: attributes
// bound before a generated token exists cannot hold it.
func (h *maskingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	m := h.ref.get()
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
func maskAttr(m *secrets.Masker, a slog.Attr) slog.Attr {
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

// maskText is m's String, or nil when there is nothing to mask.
func maskText(m *secrets.Masker) func(string) string {
	if m == nil {
		return nil
	}
	return m.String
}

// maskedProvider masks the configured secret values in p's errors, before
// they become a run's error, a transcript's error message, an event or a
// log line. A *provider.Error keeps its type (retries and overflow
// recovery read it); other errors still unwrap to what they wrap.
type maskedProvider struct {
	p provider.Provider
	m *secrets.Masker
}

func maskProvider(p provider.Provider, m *secrets.Masker) provider.Provider {
	if m == nil {
		return p
	}
	mp := maskedProvider{p: p, m: m}
	if e, ok := p.(provider.Embedder); ok {
		return maskedEmbedder{maskedProvider: mp, e: e} // keeps what the provider can do
	}
	return mp
}

// maskedEmbedder is a maskedProvider of a provider that also serves
// embeddings; their errors are masked the same way.
type maskedEmbedder struct {
	maskedProvider
	e provider.Embedder
}

func (me maskedEmbedder) Embed(ctx context.Context, req *provider.EmbedRequest) (*provider.EmbedResult, error) {
	res, err := me.e.Embed(ctx, req)
	if err != nil {
		err = me.maskErr(err)
	}
	return res, err
}

func (mp maskedProvider) Stream(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Event, error] {
	return func(yield func(*provider.Event, error) bool) {
		for ev, err := range mp.p.Stream(ctx, req) {
			if err != nil {
				err = mp.maskErr(err)
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

func (mp maskedProvider) maskErr(err error) error {
	if pe, ok := errors.AsType[*provider.Error](err); ok && err == error(pe) && mp.m.Contains(pe.Message) {
		c := *pe
		c.Message = mp.m.String(pe.Message)
		return &c
	}
	return mp.m.Error(err)
}
