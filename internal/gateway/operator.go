package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// The operator methods the OpenClaw CLI's status, health, usage, presence
// and models commands call, in the reference's result shapes (2026.9.6).
// Where Switchboard has no such subsystem (heartbeats, provider quota
// windows) the answer is the reference's empty form, never an error, so the
// commands degrade instead of failing.

// CatalogModel is one model models.list reports.
type CatalogModel struct {
	ID            string // model id within the provider
	Name          string // display name; empty means ID
	Provider      string
	ContextWindow int  // 0 when unknown
	Reasoning     bool // the model supports thinking levels
	Default       bool // the default agent's model
	// Available is false when the provider lacks what it needs to run
	// (UnavailableReason "missing-auth").
	Available         bool
	UnavailableReason string
}

// recentSessions is how many recent sessions status and health list.
const recentSessions = 10

// presenceEntry is one system-presence row (the reference's PresenceEntry).
type presenceEntry struct {
	Host         string   `json:"host,omitempty"`
	IP           string   `json:"ip,omitempty"`
	Version      string   `json:"version,omitempty"`
	Platform     string   `json:"platform,omitempty"`
	DeviceFamily string   `json:"deviceFamily,omitempty"`
	Mode         string   `json:"mode,omitempty"`
	Reason       string   `json:"reason,omitempty"`
	InstanceID   string   `json:"instanceId,omitempty"`
	Roles        []string `json:"roles,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
	Text         string   `json:"text"`
	TS           int64    `json:"ts"`
	OnlineSince  int64    `json:"onlineSince,omitempty"`
}

func (s *Server) selfPresence() presenceEntry {
	host, _ := os.Hostname()
	if host == "" {
		host = "gateway"
	}
	family := map[string]string{"linux": "Linux", "darwin": "Mac", "windows": "Windows"}[runtime.GOOS]
	if family == "" {
		family = runtime.GOOS
	}
	return presenceEntry{
		Host: host, Version: s.cfg.Version, Platform: runtime.GOOS + " " + runtime.GOARCH, DeviceFamily: family,
		Mode: "gateway", Reason: "self", InstanceID: s.instanceID,
		Text: fmt.Sprintf("Gateway: %s · app %s · mode gateway · reason self", host, s.cfg.Version),
		TS:   s.now().UnixMilli(), OnlineSince: s.started.UnixMilli(),
	}
}

// presence lists the gateway itself and every connected client.
func (s *Server) presence() []presenceEntry {
	out := []presenceEntry{s.selfPresence()}
	for _, c := range *s.connList.Load() {
		if e, ok := c.presence(); ok {
			out = append(out, e)
		}
	}
	return out
}

// ephemeralClient reports whether a client mode is a passing control-plane
// connection (cli, backend, probe), which the reference keeps out of
// presence: listing and announcing every CLI call would cost O(clients²).
func ephemeralClient(mode string) bool {
	switch strings.ToLower(strings.TrimSpace(mode)) {
	case "cli", "backend", "probe":
		return true
	}
	return false
}

// presence is the connection's system-presence row once it is connected;
// ephemeral clients have none.
func (c *conn) presence() (presenceEntry, bool) {
	c.mu.Lock()
	ready := c.ready
	c.mu.Unlock()
	if !ready || ephemeralClient(c.client.Mode) {
		return presenceEntry{}, false
	}
	ci := c.client
	host := ci.DisplayName
	if host == "" {
		host = ci.ID
	}
	ip := c.remote
	if h, _, err := net.SplitHostPort(ip); err == nil {
		ip = h
	}
	id := ci.InstanceID
	if id == "" {
		id = c.id
	}
	return presenceEntry{
		Host: host, IP: ip, Version: ci.Version, Platform: ci.Platform, DeviceFamily: ci.DeviceFamily,
		Mode: ci.Mode, Reason: "connect", InstanceID: id, Roles: []string{c.role}, Scopes: c.scopes,
		Text: fmt.Sprintf("Client: %s (%s) · app %s · mode %s · reason connect", host, ip, ci.Version, ci.Mode),
		TS:   c.connectedAt.UnixMilli(), OnlineSince: c.connectedAt.UnixMilli(),
	}, true
}

// presenceSnapshot is hello-ok snapshot.presence.
func (s *Server) presenceSnapshot() []json.RawMessage {
	var out []json.RawMessage
	for _, e := range s.presence() {
		if b, err := json.Marshal(e); err == nil {
			out = append(out, b)
		}
	}
	return out
}

// broadcastPresence sends the presence event after a client came or went.
func (s *Server) broadcastPresence() {
	s.presenceVersion.Add(1)
	b, err := json.Marshal(map[string]any{"presence": s.presence()})
	if err != nil {
		return
	}
	s.broadcast(wire.EventPresence, b, true)
}

func (s *Server) handleSystemPresence(ctx context.Context, cl *call) (any, error) {
	return s.presence(), nil
}

// handleUsageStatus answers the provider quota windows: Switchboard tracks
// none, so the list is empty.
func (s *Server) handleUsageStatus(ctx context.Context, cl *call) (any, error) {
	return map[string]any{"updatedAt": s.now().UnixMilli(), "providers": []any{}}, nil
}

// usageTotals is the reference's token and cost totals shape.
type usageTotals struct {
	Input              int64   `json:"input"`
	Output             int64   `json:"output"`
	CacheRead          int64   `json:"cacheRead"`
	CacheWrite         int64   `json:"cacheWrite"`
	TotalTokens        int64   `json:"totalTokens"`
	TotalCost          float64 `json:"totalCost"`
	InputCost          float64 `json:"inputCost"`
	OutputCost         float64 `json:"outputCost"`
	CacheReadCost      float64 `json:"cacheReadCost"`
	CacheWriteCost     float64 `json:"cacheWriteCost"`
	MissingCostEntries int64   `json:"missingCostEntries"`
}

func (t *usageTotals) add(u transcript.Usage, missing int64) {
	t.Input += u.Input
	t.Output += u.Output
	t.CacheRead += u.CacheRead
	t.CacheWrite += u.CacheWrite
	t.TotalTokens += u.TotalTokens
	if c := u.Cost; c != nil {
		t.TotalCost += c.Total
		t.InputCost += c.Input
		t.OutputCost += c.Output
		t.CacheReadCost += c.CacheRead
		t.CacheWriteCost += c.CacheWrite
	}
	t.MissingCostEntries += missing
}

// usageDay is one usage.cost daily row.
type usageDay struct {
	Date string `json:"date"`
	usageTotals
}

// usageCostParams are usage.cost's params (others are accepted and ignored).
type usageCostParams struct {
	Days      int    `json:"days"`
	StartDate string `json:"startDate"`
	EndDate   string `json:"endDate"`
}

// usageRange resolves a start/end date pair or a day count (default 30)
// ending today, in the gateway's zone.
func (s *Server) usageRange(days int, startDate, endDate string) (from, to time.Time, err error) {
	now := s.now().In(time.Local)
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.Local)
	if startDate != "" || endDate != "" {
		parse := func(v string, def time.Time) (time.Time, error) {
			if v == "" {
				return def, nil
			}
			t, err := time.ParseInLocation(time.DateOnly, v, time.Local)
			if err != nil {
				return time.Time{}, invalid("invalid date " + v + " (want YYYY-MM-DD)")
			}
			return t, nil
		}
		if from, err = parse(startDate, today.AddDate(0, 0, -29)); err != nil {
			return
		}
		if to, err = parse(endDate, today); err != nil {
			return
		}
		if to.Before(from) {
			return from, to, invalid("endDate is before startDate")
		}
		if to.Sub(from) > 3660*24*time.Hour {
			return from, to, invalid("date range too long (at most 10 years)")
		}
		return from, to.AddDate(0, 0, 1), nil
	}
	if days <= 0 {
		days = 30
	}
	days = min(days, 3660)
	return today.AddDate(0, 0, -(days - 1)), today.AddDate(0, 0, 1), nil
}

func (s *Server) handleUsageCost(ctx context.Context, cl *call) (any, error) {
	var p usageCostParams
	if len(cl.params) > 0 && string(cl.params) != "null" {
		if err := json.Unmarshal(cl.params, &p); err != nil {
			return nil, invalid("invalid usage.cost params: " + err.Error())
		}
	}
	from, to, err := s.usageRange(p.Days, p.StartDate, p.EndDate)
	if err != nil {
		return nil, err
	}
	_, off := from.Zone()
	rows, err := s.cfg.Store.UsageByDay(ctx, from, to, time.Duration(off)*time.Second)
	if err != nil {
		return nil, err
	}
	byDate := make(map[string]store.UsageDay, len(rows))
	for _, r := range rows {
		byDate[r.Day.Format(time.DateOnly)] = r
	}
	var totals usageTotals
	daily := []usageDay{}
	for d := from; d.Before(to); d = d.AddDate(0, 0, 1) {
		row := usageDay{Date: d.Format(time.DateOnly)}
		if r, ok := byDate[row.Date]; ok {
			row.add(r.Usage, r.MissingCost)
			totals.add(r.Usage, r.MissingCost)
		}
		daily = append(daily, row)
	}
	return map[string]any{
		"updatedAt": s.now().UnixMilli(),
		"days":      len(daily),
		"daily":     daily,
		"totals":    totals,
	}, nil
}

// handleModelsList lists the models the gateway can run: every configured
// provider's catalogue and the built-in offline model.
func (s *Server) handleModelsList(ctx context.Context, cl *call) (any, error) {
	var p struct {
		AgentID  string `json:"agentId"`
		Provider string `json:"provider"`
	}
	if len(cl.params) > 0 && string(cl.params) != "null" {
		if err := json.Unmarshal(cl.params, &p); err != nil {
			return nil, invalid("invalid models.list params: " + err.Error())
		}
	}
	return s.modelsList(p.Provider), nil
}

// catalog is the configured models (none without a Catalog): models.list,
// models.authStatus, chat.metadata and /models read it.
func (s *Server) catalog() []CatalogModel {
	if s.cfg.Catalog == nil {
		return nil
	}
	return s.cfg.Catalog()
}

// modelsList is models.list's answer: the catalogue, of one provider when
// provider is set.
func (s *Server) modelsList(provider string) map[string]any {
	models := []map[string]any{}
	for _, m := range s.catalog() {
		if provider != "" && !strings.EqualFold(provider, m.Provider) {
			continue
		}
		models = append(models, modelRow(m))
	}
	return map[string]any{"models": models}
}

// modelRow is m as models.list and chat.metadata list it.
func modelRow(m CatalogModel) map[string]any {
	name := m.Name
	if name == "" {
		name = m.ID
	}
	row := map[string]any{"id": m.ID, "name": name, "provider": m.Provider, "reasoning": m.Reasoning, "available": m.Available}
	if m.ContextWindow > 0 {
		row["contextWindow"] = m.ContextWindow
	}
	if m.Default {
		row["tags"] = []string{"default"}
	}
	if !m.Available && m.UnavailableReason != "" {
		row["unavailableReason"] = m.UnavailableReason
	}
	levels := []map[string]string{{"id": "off", "label": "off"}}
	if m.Reasoning {
		for _, l := range []string{"minimal", "low", "medium", "high"} {
			levels = append(levels, map[string]string{"id": l, "label": l})
		}
	}
	row["thinkingLevels"] = levels
	row["thinkingDefault"] = "off"
	return row
}

// sessionSummary is the reference's {path, count, recent} block of status
// and health.
func (s *Server) sessionSummary(ctx context.Context, agentID string) (map[string]any, error) {
	n, err := s.cfg.Store.CountSessions(ctx, store.ListOptions{AgentID: agentID})
	if err != nil {
		return nil, err
	}
	recent, err := s.cfg.Store.ListSessions(ctx, store.ListOptions{AgentID: agentID, Limit: recentSessions})
	if err != nil {
		return nil, err
	}
	now := s.now()
	rows := []map[string]any{}
	for _, r := range recent {
		rows = append(rows, map[string]any{"key": r.Key, "updatedAt": r.UpdatedAt.UnixMilli(), "age": now.Sub(r.UpdatedAt).Milliseconds()})
	}
	return map[string]any{"path": s.cfg.StorePath, "count": n, "recent": rows}, nil
}

// fullHealth is health in the reference's full shape.
func (s *Server) fullHealth(ctx context.Context) (map[string]any, error) {
	start := s.now()
	h := s.health()
	all, err := s.sessionSummary(ctx, "")
	if err != nil {
		return nil, err
	}
	agents := []map[string]any{}
	for _, id := range s.agentIDs() {
		sum, err := s.sessionSummary(ctx, id)
		if err != nil {
			return nil, err
		}
		agents = append(agents, map[string]any{"agentId": id, "isDefault": id == s.defaultAgent, "sessions": sum})
	}
	nodes, err := s.nodesList(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"ok": h.OK, "ts": h.TS, "durationMs": s.now().Sub(start).Milliseconds(),
		"channels": map[string]any{}, "channelOrder": []string{}, "channelLabels": map[string]any{},
		"heartbeatSeconds": 0, "defaultAgentId": s.defaultAgent,
		"agents": agents, "sessions": all, "nodes": nodes,
	}, nil
}

func (s *Server) handleNodesList(ctx context.Context, cl *call) (any, error) {
	var p struct{}
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	return s.nodesList(ctx)
}

// nodesList is the cluster's nodes, or this gateway as the only one.
func (s *Server) nodesList(ctx context.Context) (*wire.NodesList, error) {
	if s.cfg.Nodes != nil {
		return s.cfg.Nodes(ctx)
	}
	n := wire.Node{NodeID: "local", State: "active", Alive: true, Self: true, StartedAtMs: s.started.UnixMilli()}
	if l, ok := s.cfg.Runner.(interface {
		Load() (active, queued, lanes int)
	}); ok {
		n.ActiveRuns, n.QueuedRuns, n.Lanes = l.Load()
	}
	return &wire.NodesList{NodeID: "local", Backend: "sqlite", Nodes: []wire.Node{n}}, nil
}

// agentIDs lists the configured agents, or the default agent alone.
func (s *Server) agentIDs() []string {
	ids := s.conf.AgentIDs()
	if len(ids) == 0 {
		ids = []string{s.defaultAgent}
	}
	return ids
}

func (s *Server) handleStatus(ctx context.Context, cl *call) (any, error) {
	all, err := s.sessionSummary(ctx, "")
	if err != nil {
		return nil, err
	}
	byAgent := []map[string]any{}
	for _, id := range s.agentIDs() {
		sum, err := s.sessionSummary(ctx, id)
		if err != nil {
			return nil, err
		}
		sum["agentId"] = id
		byAgent = append(byAgent, sum)
	}
	var model any
	if s.cfg.DefaultModelRef != nil {
		if ref := s.cfg.DefaultModelRef(s.defaultAgent); ref != "" {
			model = ref
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return map[string]any{
		"runtimeVersion":       s.cfg.Version,
		"heartbeat":            map[string]any{"defaultAgentId": s.defaultAgent, "agents": []any{}},
		"channelSummary":       []any{},
		"queuedSystemEvents":   []any{},
		"degradedSecretOwners": []any{},
		"sessions": map[string]any{
			"paths": []string{s.cfg.StorePath}, "count": all["count"],
			"defaults": map[string]any{"model": model, "contextTokens": nil},
			"recent":   all["recent"], "byAgent": byAgent,
		},
		"processMemory": map[string]any{"heapUsedBytes": ms.HeapAlloc, "heapTotalBytes": ms.HeapSys, "sysBytes": ms.Sys},
		"pid":           os.Getpid(),
		"uptimeMs":      s.now().Sub(s.started).Milliseconds(),
		"connections":   len(*s.connList.Load()),
	}, nil
}

// handleConfigGet answers config.get with the effective configuration,
// secrets redacted (API keys, header values, the gateway token and
// password), in the reference's {path, exists, parsed, config, valid,
// issues, warnings, hash} shape. The file's raw text is not sent: only the
// redacted, parsed form leaves the gateway.
func (s *Server) handleConfigGet(ctx context.Context, cl *call) (any, error) {
	b, err := s.conf.RedactedJSON()
	if err != nil {
		return nil, err
	}
	path := s.conf.ConfigPath
	_, statErr := os.Stat(path)
	sum := sha256.Sum256(b)
	return map[string]any{
		"path":     path,
		"exists":   statErr == nil,
		"parsed":   json.RawMessage(b),
		"config":   json.RawMessage(b),
		"valid":    true,
		"issues":   []any{},
		"warnings": []any{},
		"hash":     "sha256:" + hex.EncodeToString(sum[:]),
	}, nil
}
