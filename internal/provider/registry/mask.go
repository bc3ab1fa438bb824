package registry

import (
	"context"
	"errors"
	"iter"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/secrets"
)

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
