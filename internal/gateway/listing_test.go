package gateway

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
)

// oracleList is sessions.list as it was computed before the filters moved
// into the store: every session loaded, then filtered and paged in Go. It
// is the reference the store-side listing must match row for row.
func oracleList(all []*store.Session, p wire.SessionsListParams, now time.Time) (keys []string, hasMore bool) {
	var rows []string
	for _, sess := range all {
		spawnedBy := p.SpawnedBy
		switch {
		case p.AgentID != "" && sess.AgentID != p.AgentID,
			p.Label != "" && sess.Label != p.Label,
			spawnedBy != "" && sess.SpawnedBy != spawnedBy,
			p.ActiveMinutes != nil && sess.UpdatedAt.Before(now.Add(-time.Duration(*p.ActiveMinutes)*time.Minute)):
			continue
		case sessionkey.IsCronRun(sess.Key):
			continue
		case sess.Key == sessionkey.GlobalKey && (!p.IncludeGlobal || spawnedBy != ""):
			continue
		case sess.Key == sessionkey.UnknownKey && (!p.IncludeUnknown || spawnedBy != ""):
			continue
		case p.ExcludeSubagents && sessionkey.IsSubagent(sess.Key):
			continue
		case p.ExcludeCron && sessionkey.IsCron(sess.Key):
			continue
		}
		rows = append(rows, sess.Key)
	}
	offset := 0
	if p.Offset != nil {
		offset = min(*p.Offset, len(rows))
	}
	rows = rows[offset:]
	if p.Limit != nil && len(rows) > *p.Limit {
		return rows[:*p.Limit], true
	}
	return rows, false
}

func TestSessionsListMatchesOracle(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	e := newEnv(t, envOptions{gateway: func(c *Config) { c.Now = func() time.Time { return now } }})
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	agents := []string{"main", "ops", "qa"}
	labels := []string{"", "", "team", "worker"}
	var parents []string
	for i := range 300 {
		agent := agents[rng.IntN(len(agents))]
		var key, spawnedBy string
		switch rng.IntN(7) {
		case 0:
			key = fmt.Sprintf("agent:%s:subagent:%d", agent, i)
			if len(parents) > 0 {
				spawnedBy = parents[rng.IntN(len(parents))]
			}
		case 1:
			key = fmt.Sprintf("agent:%s:cron:job%d", agent, i)
		case 2:
			key = fmt.Sprintf("agent:%s:cron:job%d:run:r%d", agent, i%5, i)
		case 3:
			key = fmt.Sprintf("agent:%s:discord:group:%d", agent, i)
		default:
			key = fmt.Sprintf("agent:%s:chat:%d", agent, i)
			parents = append(parents, key)
		}
		sess := &store.Session{Key: key, SessionID: fmt.Sprintf("sid-%d", i), AgentID: agent, Label: labels[rng.IntN(len(labels))],
			SpawnedBy: spawnedBy, UpdatedAt: now.Add(-time.Duration(rng.IntN(600)) * time.Minute)}
		if err := e.store.CreateSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{sessionkey.GlobalKey, sessionkey.UnknownKey} {
		if err := e.store.CreateSession(ctx, &store.Session{Key: k, SessionID: "sid-" + k, UpdatedAt: now.Add(-time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := e.store.ListSessions(ctx, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := e.operator()
	ip := func(v int) *int { return &v }
	for i := range 400 {
		var p wire.SessionsListParams
		params := map[string]any{}
		if rng.IntN(2) == 0 {
			p.Limit = ip(1 + rng.IntN(40))
			params["limit"] = *p.Limit
		}
		if rng.IntN(3) == 0 {
			p.Offset = ip(rng.IntN(60))
			params["offset"] = *p.Offset
		}
		if rng.IntN(3) == 0 {
			p.AgentID = agents[rng.IntN(len(agents))]
			params["agentId"] = p.AgentID
		}
		if rng.IntN(4) == 0 {
			p.Label = labels[2+rng.IntN(2)]
			params["label"] = p.Label
		}
		if rng.IntN(5) == 0 && len(parents) > 0 {
			p.SpawnedBy = parents[rng.IntN(len(parents))]
			params["spawnedBy"] = p.SpawnedBy
		}
		if rng.IntN(4) == 0 {
			p.ActiveMinutes = ip(1 + rng.IntN(600))
			params["activeMinutes"] = *p.ActiveMinutes
		}
		for _, f := range []struct {
			name string
			dst  *bool
		}{{"includeGlobal", &p.IncludeGlobal}, {"includeUnknown", &p.IncludeUnknown}, {"excludeSubagents", &p.ExcludeSubagents}, {"excludeCron", &p.ExcludeCron}} {
			if rng.IntN(2) == 0 {
				*f.dst = true
				params[f.name] = true
			}
		}
		want, wantMore := oracleList(all, p, now)
		var res wire.SessionsListResult
		c.ok(wire.MethodSessionsList, params, &res)
		got := keysOf(res.Sessions)
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" || res.HasMore != wantMore || res.Count != len(want) {
			t.Fatalf("case %d %v: hasMore %v (want %v), count %d; keys (-oracle +got):\n%s", i, params, res.HasMore, wantMore, res.Count, diff)
		}
		if wantMore && (res.NextOffset == nil || *res.NextOffset != slices.Max([]int{0, deref(p.Offset)})+*p.Limit) {
			t.Fatalf("case %d: nextOffset %v", i, res.NextOffset)
		}
	}
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
