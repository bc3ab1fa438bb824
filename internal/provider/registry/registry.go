// Package registry owns model resolution: "<provider>/<model>" references
// resolved against the config's providers, one adapter per provider id
// (OpenAI-compatible, Anthropic, the built-in offline model) sharing one
// HTTP client, with secret values masked in every provider error. The
// daemon builds it; the runner, gateway and HTTP API consume it through
// their own interfaces.
package registry

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/provider/anthropic"
	"github.com/switchboardhq/switchboard/internal/provider/openai"
	"github.com/switchboardhq/switchboard/internal/provider/scripted"
	"github.com/switchboardhq/switchboard/internal/secrets"
	"github.com/switchboardhq/switchboard/internal/settings"
)

// Default model ids used when an API key is configured but no model is
// chosen.
const (
	defaultOpenAIModel    = "gpt-4.1-mini"
	defaultAnthropicModel = "claude-sonnet-4-5"
)

// Registry resolves "<provider>/<model>" references against the config and
// keeps one adapter per provider id. Safe for concurrent use.
type Registry struct {
	set      *settings.Settings
	scripted provider.Provider // the built-in offline model

	// client sends every provider's requests. The default transport keeps
	// two idle connections per host, so concurrent runs against one
	// provider would open and close a connection per model call; this one
	// keeps enough for the gateway's concurrency.
	client *http.Client

	// mask masks secret values in the providers' errors.
	mask *secrets.Masker

	mu       sync.Mutex
	adapters map[string]provider.Provider // by provider id
}

// maxIdlePerProvider bounds the idle connections kept to one provider host.
const maxIdlePerProvider = 256

var _ agent.ModelResolver = (*Registry)(nil)

// New returns the registry of set's providers; the configured secret
// values are masked in every provider error.
func New(set *settings.Settings) *Registry {
	mask := secrets.New(set.SecretValues...)
	return &Registry{
		set:      set,
		mask:     mask,
		scripted: maskProvider(scripted.New(scripted.Options{}), mask),
		adapters: make(map[string]provider.Provider),
		client:   &http.Client{Transport: providerTransport()},
	}
}

func providerTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = maxIdlePerProvider
	return t
}

// unresolvedError is a model reference that cannot be resolved: its
// message says why and what to do, and it matches provider.ErrUnknownModel
// without that sentinel's text trailing the fix a user reads.
type unresolvedError struct{ msg string }

func unresolved(msg string) error { return &unresolvedError{msg: msg} }

// Error returns why the reference cannot be resolved.
func (e *unresolvedError) Error() string { return e.msg }

// Unwrap returns provider.ErrUnknownModel.
func (e *unresolvedError) Unwrap() error { return provider.ErrUnknownModel }

// CloseIdle closes the providers' idle connections (at shutdown).
func (r *Registry) CloseIdle() { r.client.CloseIdleConnections() }

// DefaultModelRef returns the model an agent uses when nothing overrides
// it: its configured model, else the first configured API key's default
// model, else the built-in offline model.
func (r *Registry) DefaultModelRef(agentID string) string {
	if ref := r.set.Agent(agentID).Model; ref != "" {
		return ref
	}
	if _, ok := r.set.Provider("anthropic"); ok {
		return "anthropic/" + defaultAnthropicModel
	}
	if _, ok := r.set.Provider("openai"); ok {
		return "openai/" + defaultOpenAIModel
	}
	return scripted.Model
}

// ResolveModel implements agent.ModelResolver.
func (r *Registry) ResolveModel(agentID, ref string) (agent.Model, error) {
	if ref == "" {
		ref = r.DefaultModelRef(agentID)
	}
	provID, modelID := settings.SplitModelRef(ref)
	provID = strings.ToLower(provID)
	if provID == "" || modelID == "" {
		return agent.Model{}, unresolved(fmt.Sprintf("invalid model %q (want \"<provider>/<model>\")", ref))
	}
	pc, ok := r.set.Provider(provID)
	if provID == scripted.ProviderName && (!ok || pc.BaseURL == "") {
		// The built-in offline model; a models.providers.scripted entry
		// without a baseUrl gives its models' windows and maxTokens.
		model := agent.Model{Provider: r.scripted, ProviderID: provID, ModelID: modelID, API: "scripted"}
		applyModelDef(&model, pc, modelID)
		model.ContextTokens, model.ContextWindow = r.set.ModelWindow(provID, modelID)
		return model, nil
	}
	if !ok {
		if provID == "openai" || provID == "anthropic" {
			// Built in, but only once a key says which account to use.
			return agent.Model{}, unresolved(fmt.Sprintf("no API key for provider %s: set %s_API_KEY or models.providers.%s.apiKey",
				provID, strings.ToUpper(provID), provID))
		}
		return agent.Model{}, unresolved(fmt.Sprintf("unknown model provider %q in %q (configure it under models.providers, or use %s offline)",
			provID, ref, scripted.Model))
	}
	p, err := r.adapter(provID, pc)
	if err != nil {
		return agent.Model{}, err
	}
	model := agent.Model{Provider: p, ProviderID: provID, ModelID: modelID, API: pc.API}
	applyModelDef(&model, pc, modelID)
	model.ContextTokens, model.ContextWindow = r.set.ModelWindow(provID, modelID)
	return model, nil
}

// applyModelDef sets the maxTokens and price pc's catalogue gives modelID.
func applyModelDef(model *agent.Model, pc settings.Provider, modelID string) {
	for _, def := range pc.Models {
		if def.ID != modelID {
			continue
		}
		if def.MaxTokens != nil {
			model.MaxTokens = *def.MaxTokens
		}
		if c := def.Cost; c != nil {
			model.Price = &agent.Price{Input: c.Input, Output: c.Output, CacheRead: c.CacheRead, CacheWrite: c.CacheWrite}
		}
	}
}

func (r *Registry) adapter(id string, pc settings.Provider) (provider.Provider, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.adapters[id]; ok {
		return p, nil
	}
	var p provider.Provider
	var err error
	switch pc.API {
	case settings.APIOpenAICompletions:
		p, err = openai.New(openai.Config{Name: id, BaseURL: pc.BaseURL, APIKey: pc.APIKey, Headers: pc.Headers, MaxRetries: 2, HTTPClient: r.client})
	case settings.APIAnthropicMessages:
		base := strings.TrimSuffix(strings.TrimRight(pc.BaseURL, "/"), "/v1")
		p, err = anthropic.New(anthropic.Config{Name: id, BaseURL: base, APIKey: pc.APIKey, Headers: pc.Headers, MaxRetries: 2, HTTPClient: r.client})
	default:
		return nil, fmt.Errorf("model provider %q: unsupported api %q", id, pc.API)
	}
	if err != nil {
		return nil, err
	}
	p = maskProvider(p, r.mask)
	r.adapters[id] = p
	return p, nil
}

// Embed serves the HTTP API's embeddings: the model of override
// ("<provider>/<model>") or else memory.search's provider and model, on a
// configured provider whose API serves embeddings (OpenAI-compatible).
func (r *Registry) Embed(ctx context.Context, agentID, override string, input []string, dims int) (*provider.EmbedResult, string, error) {
	e, model, used, dims, err := r.embedder(override, dims)
	if err != nil {
		return nil, used, err
	}
	res, err := e.Embed(ctx, &provider.EmbedRequest{Model: model, Input: input, Dimensions: dims})
	return res, used, err
}

// EmbedReady says whether memory.search's embedding model resolves to a
// provider that serves embeddings, without calling it
// (provider.ErrNoEmbeddings, wrapped, when not).
func (r *Registry) EmbedReady() error {
	_, _, _, _, err := r.embedder("", 0)
	return err
}

// EmbedModel is memory.search's embedding model, "<provider>/<model>".
func (r *Registry) EmbedModel() string {
	p, m := r.set.EmbeddingRef()
	return p + "/" + m
}

// embedder resolves the embedding model of override ("<provider>/<model>")
// or else memory.search's: the provider, the model, "<provider>/<model>",
// the vector size to ask for, or why there is none.
func (r *Registry) embedder(override string, dims int) (provider.Embedder, string, string, int, error) {
	ms := r.set.MemorySearch
	provID, model := r.set.EmbeddingRef()
	if override != "" {
		provID, model = settings.SplitModelRef(override)
		provID = strings.ToLower(provID)
	} else if ms.Enabled != nil && !*ms.Enabled {
		return nil, "", "", 0, fmt.Errorf("%w: memory.search.enabled is false (send x-openclaw-model: <provider>/<model> to pick one)", provider.ErrNoEmbeddings)
	}
	if dims == 0 {
		dims = ms.OutputDimensionality
	}
	used := provID + "/" + model
	if model == "" {
		return nil, "", used, 0, fmt.Errorf("%w: set memory.search.model for provider %s", provider.ErrNoEmbeddings, provID)
	}
	pc, ok := r.set.Provider(provID)
	if !ok {
		if provID == "openai" {
			return nil, "", used, 0, fmt.Errorf("%w: no API key for provider openai: set OPENAI_API_KEY or models.providers.openai.apiKey", provider.ErrNoEmbeddings)
		}
		return nil, "", used, 0, fmt.Errorf("%w: provider %q is not configured under models.providers", provider.ErrNoEmbeddings, provID)
	}
	p, err := r.adapter(provID, pc)
	if err != nil {
		return nil, "", used, 0, fmt.Errorf("%w: %v", provider.ErrNoEmbeddings, err)
	}
	e, ok := p.(provider.Embedder)
	if !ok {
		return nil, "", used, 0, fmt.Errorf("%w: provider %s (api %s) serves no embeddings; use an OpenAI-compatible provider", provider.ErrNoEmbeddings, provID, pc.API)
	}
	return e, model, used, dims, nil
}
