package daemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/gateway"
	"github.com/switchboardhq/switchboard/internal/httpapi"
	"github.com/switchboardhq/switchboard/internal/memory"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/provider/anthropic"
	"github.com/switchboardhq/switchboard/internal/provider/openai"
	"github.com/switchboardhq/switchboard/internal/provider/scripted"
	"github.com/switchboardhq/switchboard/internal/secrets"
)

// Default model ids used when an API key is configured but no model is
// chosen.
const (
	defaultOpenAIModel    = "gpt-4.1-mini"
	defaultAnthropicModel = "claude-sonnet-4-5"
)

// models resolves "<provider>/<model>" references against the config and
// keeps one adapter per provider id. Safe for concurrent use.
type models struct {
	cfg      *config.Config
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

var _ agent.ModelResolver = (*models)(nil)

func newModels(cfg *config.Config) *models {
	mask := secrets.New(cfg.SecretValues()...)
	return &models{
		cfg:      cfg,
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

// closeIdle closes the providers' idle connections (at shutdown).
func (m *models) closeIdle() { m.client.CloseIdleConnections() }

// DefaultModelRef returns the model an agent uses when nothing overrides
// it: its configured model, else the first configured API key's default
// model, else the built-in offline model.
func (m *models) DefaultModelRef(agentID string) string {
	if ref := m.cfg.AgentModel(agentID); ref != "" {
		return ref
	}
	if _, ok := m.cfg.Provider("anthropic"); ok {
		return "anthropic/" + defaultAnthropicModel
	}
	if _, ok := m.cfg.Provider("openai"); ok {
		return "openai/" + defaultOpenAIModel
	}
	return scripted.Model
}

// ResolveModel implements agent.ModelResolver.
func (m *models) ResolveModel(agentID, ref string) (agent.Model, error) {
	if ref == "" {
		ref = m.DefaultModelRef(agentID)
	}
	provID, modelID := config.SplitModelRef(ref)
	provID = strings.ToLower(provID)
	if provID == "" || modelID == "" {
		return agent.Model{}, fmt.Errorf("invalid model %q (want \"<provider>/<model>\"): %w", ref, provider.ErrUnknownModel)
	}
	pc, ok := m.cfg.Provider(provID)
	if provID == scripted.ProviderName && (!ok || pc.BaseURL == "") {
		// The built-in offline model; a models.providers.scripted entry
		// without a baseUrl gives its models' windows and maxTokens.
		model := agent.Model{Provider: m.scripted, ProviderID: provID, ModelID: modelID, API: "scripted"}
		applyModelDef(&model, pc, modelID)
		model.ContextTokens, model.ContextWindow = m.cfg.ModelWindow(provID, modelID)
		return model, nil
	}
	if !ok {
		if provID == "openai" || provID == "anthropic" {
			// Built in, but only once a key says which account to use.
			return agent.Model{}, fmt.Errorf("no API key for provider %s: set %s_API_KEY or models.providers.%s.apiKey: %w",
				provID, strings.ToUpper(provID), provID, provider.ErrUnknownModel)
		}
		return agent.Model{}, fmt.Errorf("unknown model provider %q in %q (configure it under models.providers, or use %s offline): %w",
			provID, ref, scripted.Model, provider.ErrUnknownModel)
	}
	p, err := m.adapter(provID, pc)
	if err != nil {
		return agent.Model{}, err
	}
	model := agent.Model{Provider: p, ProviderID: provID, ModelID: modelID, API: pc.API}
	applyModelDef(&model, pc, modelID)
	model.ContextTokens, model.ContextWindow = m.cfg.ModelWindow(provID, modelID)
	return model, nil
}

// applyModelDef sets the maxTokens and price pc's catalogue gives modelID.
func applyModelDef(model *agent.Model, pc config.Provider, modelID string) {
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

func (m *models) adapter(id string, pc config.Provider) (provider.Provider, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.adapters[id]; ok {
		return p, nil
	}
	var p provider.Provider
	var err error
	switch pc.API {
	case config.APIOpenAICompletions:
		p, err = openai.New(openai.Config{Name: id, BaseURL: pc.BaseURL, APIKey: pc.APIKey, Headers: pc.Headers, MaxRetries: 2, HTTPClient: m.client})
	case config.APIAnthropicMessages:
		base := strings.TrimSuffix(strings.TrimRight(pc.BaseURL, "/"), "/v1")
		p, err = anthropic.New(anthropic.Config{Name: id, BaseURL: base, APIKey: pc.APIKey, Headers: pc.Headers, MaxRetries: 2, HTTPClient: m.client})
	default:
		return nil, fmt.Errorf("model provider %q: unsupported api %q", id, pc.API)
	}
	if err != nil {
		return nil, err
	}
	p = maskProvider(p, m.mask)
	m.adapters[id] = p
	return p, nil
}

// Catalog lists every model the gateway can run for models.list: each
// configured provider's models, then the built-in offline model.
func (m *models) Catalog() []gateway.CatalogModel {
	def := m.DefaultModelRef(m.cfg.DefaultAgentID())
	var out []gateway.CatalogModel
	provs := m.cfg.Providers()
	for _, id := range slices.Sorted(maps.Keys(provs)) {
		pc := provs[id]
		available, reason := true, ""
		official := strings.HasPrefix(pc.BaseURL, config.DefaultOpenAIBaseURL) || strings.HasPrefix(pc.BaseURL, config.DefaultAnthropicBaseURL)
		if pc.APIKey == "" && official {
			available, reason = false, "missing-auth"
		}
		for _, md := range pc.Models {
			cm := gateway.CatalogModel{ID: md.ID, Name: md.Name, Provider: id, Reasoning: md.Reasoning,
				Default: id+"/"+md.ID == def, Available: available, UnavailableReason: reason}
			if md.ContextWindow != nil {
				cm.ContextWindow = *md.ContextWindow
			}
			out = append(out, cm)
		}
		// The default model of a provider configured without a catalogue.
		if provID, modelID := config.SplitModelRef(def); provID == id && !slices.ContainsFunc(pc.Models, func(md config.ModelDef) bool { return md.ID == modelID }) {
			out = append(out, gateway.CatalogModel{ID: modelID, Provider: id, Default: true, Available: available, UnavailableReason: reason})
		}
	}
	if _, ok := provs[scripted.ProviderName]; !ok {
		out = append(out, gateway.CatalogModel{ID: scripted.ModelID, Name: "Switchboard offline model", Provider: scripted.ProviderName,
			Default: def == scripted.Model, Available: true})
	}
	return out
}

// Embed implements httpapi.Embeddings: the model of override
// ("<provider>/<model>") or else memory.search's provider and model, on a
// configured provider whose API serves embeddings (OpenAI-compatible).
func (m *models) Embed(ctx context.Context, agentID, override string, input []string, dims int) (*provider.EmbedResult, string, error) {
	e, model, used, dims, err := m.embedder(override, dims)
	if err != nil {
		return nil, used, err
	}
	res, err := e.Embed(ctx, &provider.EmbedRequest{Model: model, Input: input, Dimensions: dims})
	return res, used, err
}

// embedder resolves the embedding model of override ("<provider>/<model>")
// or else memory.search's, without calling it: the provider, the model,
// "<provider>/<model>", the vector size to ask for, or why there is none
// (httpapi.ErrNoEmbeddings).
func (m *models) embedder(override string, dims int) (provider.Embedder, string, string, int, error) {
	ms := m.cfg.Memory.Search
	provID, model := m.cfg.EmbeddingRef()
	if override != "" {
		provID, model = config.SplitModelRef(override)
		provID = strings.ToLower(provID)
	} else if ms.Enabled != nil && !*ms.Enabled {
		return nil, "", "", 0, fmt.Errorf("%w: memory.search.enabled is false (send x-openclaw-model: <provider>/<model> to pick one)", httpapi.ErrNoEmbeddings)
	}
	if dims == 0 {
		dims = ms.OutputDimensionality
	}
	used := provID + "/" + model
	if model == "" {
		return nil, "", used, 0, fmt.Errorf("%w: set memory.search.model for provider %s", httpapi.ErrNoEmbeddings, provID)
	}
	pc, ok := m.cfg.Provider(provID)
	if !ok {
		if provID == "openai" {
			return nil, "", used, 0, fmt.Errorf("%w: no API key for provider openai: set OPENAI_API_KEY or models.providers.openai.apiKey", httpapi.ErrNoEmbeddings)
		}
		return nil, "", used, 0, fmt.Errorf("%w: provider %q is not configured under models.providers", httpapi.ErrNoEmbeddings, provID)
	}
	p, err := m.adapter(provID, pc)
	if err != nil {
		return nil, "", used, 0, fmt.Errorf("%w: %v", httpapi.ErrNoEmbeddings, err)
	}
	e, ok := p.(provider.Embedder)
	if !ok {
		return nil, "", used, 0, fmt.Errorf("%w: provider %s (api %s) serves no embeddings; use an OpenAI-compatible provider", httpapi.ErrNoEmbeddings, provID, pc.API)
	}
	return e, model, used, dims, nil
}

// memoryEmbedder serves memory search's vectors with memory.search's
// embedding model (memory.Embedder).
type memoryEmbedder struct{ m *models }

func (e memoryEmbedder) Model() string {
	p, m := e.m.cfg.EmbeddingRef()
	return p + "/" + m
}

func (e memoryEmbedder) Ready() error {
	if _, _, _, _, err := e.m.embedder("", 0); err != nil {
		return fmt.Errorf("%w: %v", memory.ErrNoEmbeddings, err)
	}
	return nil
}

func (e memoryEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	res, _, err := e.m.Embed(ctx, "", "", texts, 0)
	if errors.Is(err, httpapi.ErrNoEmbeddings) {
		return nil, fmt.Errorf("%w: %v", memory.ErrNoEmbeddings, err)
	}
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(res.Vectors))
	for i, v := range res.Vectors {
		out[i] = make([]float32, len(v))
		for j, f := range v {
			out[i][j] = float32(f)
		}
	}
	return out, nil
}
