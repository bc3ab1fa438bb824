package daemon

import (
	"maps"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard/internal/gateway"
	"github.com/switchboardhq/switchboard/internal/provider/registry"
	"github.com/switchboardhq/switchboard/internal/provider/scripted"
	"github.com/switchboardhq/switchboard/internal/settings"
)

// modelCatalog lists every model the gateway can run for models.list: each
// configured provider's models, then the built-in offline model.
func modelCatalog(set *settings.Settings, mods *registry.Registry) []gateway.CatalogModel {
	def := mods.DefaultModelRef(set.DefaultAgent)
	var out []gateway.CatalogModel
	provs := set.Providers()
	for _, id := range slices.Sorted(maps.Keys(provs)) {
		pc := provs[id]
		available, reason := true, ""
		official := strings.HasPrefix(pc.BaseURL, settings.DefaultOpenAIBaseURL) || strings.HasPrefix(pc.BaseURL, settings.DefaultAnthropicBaseURL)
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
		if provID, modelID := settings.SplitModelRef(def); provID == id && !slices.ContainsFunc(pc.Models, func(md settings.ModelDef) bool { return md.ID == modelID }) {
			out = append(out, gateway.CatalogModel{ID: modelID, Provider: id, Default: true, Available: available, UnavailableReason: reason})
		}
	}
	if _, ok := provs[scripted.ProviderName]; !ok {
		out = append(out, gateway.CatalogModel{ID: scripted.ModelID, Name: "Switchboard offline model", Provider: scripted.ProviderName,
			Default: def == scripted.Model, Available: true})
	}
	return out
}
