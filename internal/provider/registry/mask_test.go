package registry

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/secrets"
)

type errProvider struct{ err error }

func (p errProvider) Stream(context.Context, *provider.Request) iter.Seq2[*provider.Event, error] {
	return func(yield func(*provider.Event, error) bool) { yield(nil, p.err) }
}

func TestMaskedProvider(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	m := secrets.New(key)
	pe := &provider.Error{Provider: "openai", StatusCode: 401, Message: "Invalid API key provided: Bearer " + key}
	for _, in := range []error{pe, errors.Join(errors.New("wrapped"), pe)} {
		for _, err := range maskProvider(errProvider{in}, m).Stream(context.Background(), &provider.Request{}) {
			if strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), secrets.Mask) {
				t.Fatalf("error = %q", err)
			}
			if got, ok := errors.AsType[*provider.Error](err); !ok || got.StatusCode != 401 {
				t.Fatalf("the provider error's type is lost: %#v", err)
			}
		}
	}
}

type errEmbedder struct{ errProvider }

func (p errEmbedder) Embed(context.Context, *provider.EmbedRequest) (*provider.EmbedResult, error) {
	return nil, p.err
}

// TestMaskedProviderKeepsEmbeddings: a provider that serves embeddings
// still does once masked, and its embedding errors are masked too.
func TestMaskedProviderKeepsEmbeddings(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	p := maskProvider(errEmbedder{errProvider{errors.New("bad key " + key)}}, secrets.New(key))
	e, ok := p.(provider.Embedder)
	if !ok {
		t.Fatal("the masked provider serves no embeddings")
	}
	if _, err := e.Embed(context.Background(), &provider.EmbedRequest{}); err == nil || strings.Contains(err.Error(), key) {
		t.Fatalf("Embed error = %v", err)
	}
	if _, ok := maskProvider(errProvider{}, secrets.New(key)).(provider.Embedder); ok {
		t.Fatal("a provider without embeddings gained them")
	}
}
