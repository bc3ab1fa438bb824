package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
)

// sessionsUsageParams are sessions.usage's params (others are accepted and
// ignored).
type sessionsUsageParams struct {
	Key       string `json:"key"`
	AgentID   string `json:"agentId"`
	StartDate string `json:"startDate"`
	EndDate   string `json:"endDate"`
	Limit     int    `json:"limit"`
}

// messageCounts is the reference's message counts shape.
type messageCounts struct {
	Total       int64 `json:"total"`
	User        int64 `json:"user"`
	Assistant   int64 `json:"assistant"`
	ToolCalls   int64 `json:"toolCalls"`
	ToolResults int64 `json:"toolResults"`
	Errors      int64 `json:"errors"`
}

func (m *messageCounts) add(s store.RunStats) {
	m.Total += s.User + s.Assistant
	m.User += s.User
	m.Assistant += s.Assistant
	m.ToolCalls += s.ToolCalls
	m.ToolResults += s.ToolResults
	m.Errors += s.Errors
}

// toolCount is one tool of a toolUsage list.
type toolCount struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

// toolUsage is the reference's tool usage shape: calls by tool, most
// called first (ties by name).
type toolUsage struct {
	TotalCalls  int64       `json:"totalCalls"`
	UniqueTools int         `json:"uniqueTools"`
	Tools       []toolCount `json:"tools"`
}

func newToolUsage(byName map[string]int64) toolUsage {
	u := toolUsage{Tools: []toolCount{}}
	for name, n := range byName {
		u.Tools = append(u.Tools, toolCount{name, n})
		u.TotalCalls += n
	}
	slices.SortFunc(u.Tools, func(a, b toolCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Name, b.Name))
	})
	u.UniqueTools = len(u.Tools)
	return u
}

// dailyUsage is one day of a session's dailyBreakdown.
type dailyUsage struct {
	Date   string  `json:"date"`
	Tokens int64   `json:"tokens"`
	Cost   float64 `json:"cost"`
	usageTotals
}

// dailyMessages is one day of a session's dailyMessageCounts.
type dailyMessages struct {
	Date string `json:"date"`
	messageCounts
}

// sessionUsage is a session's usage in the range, in the reference's
// session cost summary shape (the runs that ended in the range, by the
// day they ended).
type sessionUsage struct {
	SessionID          string          `json:"sessionId,omitempty"`
	FirstActivity      int64           `json:"firstActivity,omitempty"`
	LastActivity       int64           `json:"lastActivity,omitempty"`
	DurationMs         int64           `json:"durationMs,omitempty"`
	ActivityDates      []string        `json:"activityDates"`
	DailyBreakdown     []dailyUsage    `json:"dailyBreakdown"`
	DailyMessageCounts []dailyMessages `json:"dailyMessageCounts"`
	MessageCounts      messageCounts   `json:"messageCounts"`
	ToolUsage          toolUsage       `json:"toolUsage"`
	usageTotals
}

// sessionTally accumulates one session's runs.
type sessionTally struct {
	first, last time.Time
	totals      usageTotals
	counts      messageCounts
	tools       map[string]int64
	days        map[string]*dailyUsage
	dayCounts   map[string]*dailyMessages
}

func (t *sessionTally) add(r store.RunUsage, day string) {
	if t.first.IsZero() || r.EndedAt.Before(t.first) {
		t.first = r.EndedAt
	}
	if r.EndedAt.After(t.last) {
		t.last = r.EndedAt
	}
	missing := int64(0)
	if r.Usage.Cost == nil && r.Usage.TotalTokens > 0 {
		missing = 1
	}
	t.totals.add(r.Usage, missing)
	t.counts.add(r.Stats)
	for name, n := range r.Stats.Tools {
		t.tools[name] += n
	}
	d := t.days[day]
	if d == nil {
		d = &dailyUsage{Date: day}
		t.days[day] = d
	}
	d.add(r.Usage, missing)
	d.Tokens, d.Cost = d.TotalTokens, d.TotalCost
	dc := t.dayCounts[day]
	if dc == nil {
		dc = &dailyMessages{Date: day}
		t.dayCounts[day] = dc
	}
	dc.add(r.Stats)
}

func (t *sessionTally) summary(sessionID string) sessionUsage {
	u := sessionUsage{SessionID: sessionID, ActivityDates: []string{}, DailyBreakdown: []dailyUsage{}, DailyMessageCounts: []dailyMessages{},
		MessageCounts: t.counts, ToolUsage: newToolUsage(t.tools), usageTotals: t.totals}
	if !t.first.IsZero() {
		u.FirstActivity, u.LastActivity = t.first.UnixMilli(), t.last.UnixMilli()
		u.DurationMs = t.last.Sub(t.first).Milliseconds()
	}
	for _, day := range sortedKeys(t.days) {
		u.ActivityDates = append(u.ActivityDates, day)
		u.DailyBreakdown = append(u.DailyBreakdown, *t.days[day])
		u.DailyMessageCounts = append(u.DailyMessageCounts, *t.dayCounts[day])
	}
	return u
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// usageDayTotals is one day of the aggregates' daily list.
type usageDayTotals struct {
	Date      string  `json:"date"`
	Tokens    int64   `json:"tokens"`
	Cost      float64 `json:"cost"`
	Messages  int64   `json:"messages"`
	ToolCalls int64   `json:"toolCalls"`
	Errors    int64   `json:"errors"`
}

// handleSessionsUsage reports usage per session for the runs that ended in
// the range (tokens and cost as the runs recorded them; messages by role,
// tool calls by tool name and errors as FinishRun counted them), by day,
// with totals and the reference's aggregates. It reads the runs over their
// end index, so its cost follows the runs in the range, not the number of
// sessions.
func (s *Server) handleSessionsUsage(ctx context.Context, cl *call) (any, error) {
	var p sessionsUsageParams
	if len(cl.params) > 0 && string(cl.params) != "null" {
		if err := json.Unmarshal(cl.params, &p); err != nil {
			return nil, invalid("invalid sessions.usage params: " + err.Error())
		}
	}
	from, to, err := s.usageRange(0, p.StartDate, p.EndDate)
	if err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	filter := store.RunUsageFilter{From: from, To: to}
	var list []*store.Session
	if p.Key != "" {
		key := s.canonicalKey(p.Key, s.agentID(p.AgentID))
		filter.SessionKey = key
		sess, err := s.cfg.Store.GetSession(ctx, key)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		if sess != nil {
			list = append(list, sess)
		}
	} else {
		opts := store.ListOptions{UpdatedSince: from, Limit: limit}
		if strings.TrimSpace(p.AgentID) != "" {
			opts.AgentID = s.agentID(p.AgentID)
			filter.AgentID = opts.AgentID
		}
		if list, err = s.cfg.Store.ListSessions(ctx, opts); err != nil {
			return nil, err
		}
	}
	runs, err := s.cfg.Store.RunsUsage(ctx, filter)
	if err != nil {
		return nil, err
	}
	tallies := map[string]*sessionTally{}
	for _, r := range runs {
		t := tallies[r.SessionKey]
		if t == nil {
			t = &sessionTally{tools: map[string]int64{}, days: map[string]*dailyUsage{}, dayCounts: map[string]*dailyMessages{}}
			tallies[r.SessionKey] = t
		}
		t.add(r, r.EndedAt.In(from.Location()).Format(time.DateOnly))
	}

	type agg struct {
		key string
		usageTotals
		count int
	}
	byAgent, byModel, byProvider := map[string]*agg{}, map[string]*agg{}, map[string]*agg{}
	bump := func(m map[string]*agg, k string, u usageTotals) {
		a := m[k]
		if a == nil {
			a = &agg{key: k}
			m[k] = a
		}
		a.merge(u)
		a.count++
	}
	var totals usageTotals
	var messages messageCounts
	tools := map[string]int64{}
	days := map[string]*usageDayTotals{}
	costDays := map[string]*dailyUsage{}
	sessionCount := 0
	sessions := []map[string]any{}
	for _, sess := range list {
		if sess.UpdatedAt.After(to) {
			continue
		}
		t := tallies[sess.Key]
		if t == nil {
			t = &sessionTally{tools: map[string]int64{}, days: map[string]*dailyUsage{}, dayCounts: map[string]*dailyMessages{}}
		}
		u := t.summary(sess.SessionID)
		if u.FirstActivity != 0 || u.MessageCounts.Total > 0 {
			sessionCount++
		}
		totals.merge(u.usageTotals)
		messages.merge(u.MessageCounts)
		for _, tc := range u.ToolUsage.Tools {
			tools[tc.Name] += tc.Count
		}
		for i, d := range u.DailyBreakdown {
			day := days[d.Date]
			if day == nil {
				day = &usageDayTotals{Date: d.Date}
				days[d.Date] = day
			}
			dc := u.DailyMessageCounts[i]
			day.Tokens += d.Tokens
			day.Cost += d.Cost
			day.Messages += dc.Total
			day.ToolCalls += dc.ToolCalls
			day.Errors += dc.Errors
			cd := costDays[d.Date]
			if cd == nil {
				cd = &dailyUsage{Date: d.Date}
				costDays[d.Date] = cd
			}
			cd.merge(d.usageTotals)
		}
		model := sess.Model
		if model == "" && s.cfg.DefaultModelRef != nil {
			model = s.cfg.DefaultModelRef(sess.AgentID)
		}
		bump(byAgent, sess.AgentID, u.usageTotals)
		bump(byModel, model, u.usageTotals)
		if prov, _ := settings.SplitModelRef(model); prov != "" {
			bump(byProvider, prov, u.usageTotals)
		}
		row := map[string]any{
			"key": sess.Key, "sessionId": sess.SessionID, "agentId": sess.AgentID,
			"updatedAt": sess.UpdatedAt.UnixMilli(), "usage": u,
		}
		if sess.Label != "" {
			row["label"] = sess.Label
		}
		if model != "" {
			row["model"] = model
		}
		sessions = append(sessions, row)
	}
	list2 := func(m map[string]*agg, name string) []map[string]any {
		out := []map[string]any{}
		for _, k := range sortedKeys(m) {
			a := m[k]
			out = append(out, map[string]any{name: a.key, "count": a.count, "totals": a.usageTotals})
		}
		return out
	}
	daily := []usageDayTotals{}
	for _, d := range sortedKeys(days) {
		daily = append(daily, *days[d])
	}
	costDaily := []dailyUsage{}
	for _, d := range sortedKeys(costDays) {
		cd := *costDays[d]
		cd.Tokens, cd.Cost = cd.TotalTokens, cd.TotalCost
		costDaily = append(costDaily, cd)
	}
	return map[string]any{
		"updatedAt": s.now().UnixMilli(),
		"startDate": from.Format(time.DateOnly),
		"endDate":   to.AddDate(0, 0, -1).Format(time.DateOnly),
		"sessions":  sessions,
		"totals":    totals,
		// The reference's aggregates. Channels, creators and latencies are
		// not recorded: empty, never absent (the Control UI reads each).
		"aggregates": map[string]any{
			"sessionCount": sessionCount,
			"messages":     messages,
			"tools":        newToolUsage(tools),
			"byAgent":      list2(byAgent, "agentId"),
			"byModel":      list2(byModel, "model"),
			"byProvider":   list2(byProvider, "provider"),
			"byChannel":    []any{},
			"byCreator":    []any{},
			"costDaily":    costDaily,
			"dailyLatency": []any{},
			"modelDaily":   []any{},
			"daily":        daily,
		},
	}, nil
}

func (m *messageCounts) merge(o messageCounts) {
	m.Total += o.Total
	m.User += o.User
	m.Assistant += o.Assistant
	m.ToolCalls += o.ToolCalls
	m.ToolResults += o.ToolResults
	m.Errors += o.Errors
}

// merge adds o to t.
func (t *usageTotals) merge(o usageTotals) {
	t.Input += o.Input
	t.Output += o.Output
	t.CacheRead += o.CacheRead
	t.CacheWrite += o.CacheWrite
	t.TotalTokens += o.TotalTokens
	t.TotalCost += o.TotalCost
	t.InputCost += o.InputCost
	t.OutputCost += o.OutputCost
	t.CacheReadCost += o.CacheReadCost
	t.CacheWriteCost += o.CacheWriteCost
	t.MissingCostEntries += o.MissingCostEntries
}
