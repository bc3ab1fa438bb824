package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/safeerr"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/subagent"
)

// fakeSubagents is a hand-written Subagents that records its calls.
type fakeSubagents struct {
	infos  []subagent.Info
	killed map[string][]string // run id → killed ids; absent: unknown run
	// redeliver maps an id to Redeliver's error; absent ids are not found.
	redeliver map[string]error

	// mu guards the fields that follow.
	mu        sync.Mutex
	announces []*store.OutboxItem
	calls     []string
}

var _ Subagents = (*fakeSubagents)(nil)

func (f *fakeSubagents) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeSubagents) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

func (f *fakeSubagents) List(_ context.Context, requester string, active bool, limit int) ([]subagent.Info, bool, error) {
	f.record("List(%q, %v)", requester, active)
	if limit > 0 && len(f.infos) > limit {
		return f.infos[:limit], true, nil
	}
	return f.infos, false, nil
}

func (f *fakeSubagents) Kill(_ context.Context, runID string) ([]string, error) {
	f.record("Kill(%q)", runID)
	killed, ok := f.killed[runID]
	if !ok {
		return nil, safeerr.Errorf("no sub-agent run %s", runID)
	}
	return killed, nil
}

func (f *fakeSubagents) Announces(_ context.Context, statuses []store.OutboxStatus, limit int) ([]*store.OutboxItem, error) {
	f.record("Announces(%v)", statuses)
	f.mu.Lock()
	defer f.mu.Unlock()
	if limit > 0 && len(f.announces) > limit {
		return f.announces[:limit], nil
	}
	return f.announces, nil
}

func (f *fakeSubagents) Redeliver(_ context.Context, id string) error {
	f.record("Redeliver(%q)", id)
	err, ok := f.redeliver[id]
	if !ok {
		return fmt.Errorf("fake.UpdateOutbox: %q: %w", id, store.ErrNotFound)
	}
	return err
}

func TestSubagentsMethods(t *testing.T) {
	created := time.UnixMilli(1_700_000_000_000).UTC()
	fake := &fakeSubagents{
		infos: []subagent.Info{{
			Record: subagent.Record{
				ChildRunID: "run-1", ChildSessionKey: "agent:main:subagent:c1", AgentID: "main",
				RequesterKey: "agent:main:main", RequesterDisplay: "main", Task: "count the files",
				Label: "counter", Cleanup: "keep", Mode: "run", RunTimeoutSeconds: 60, CreatedAt: created.UnixMilli(),
			},
			RunStatus: "running", StartedAt: created.UnixMilli() + 5,
		}},
		killed: map[string][]string{"run-1": {"run-1", "run-2"}, "done": nil},
		announces: []*store.OutboxItem{{
			ID: "announce:run-9:agent:main:main", Kind: subagent.KindAnnounce, SessionKey: "agent:main:main",
			RunID: "run-9", Status: store.OutboxDead, Attempts: 7, LastError: "requester busy",
			CreatedAt: created, UpdatedAt: created.Add(time.Minute), NextAttemptAt: created.Add(2 * time.Minute),
		}},
		redeliver: map[string]error{
			"announce:run-9:agent:main:main": nil,
			"announce:run-8:agent:main:main": safeerr.New("already delivered: announce:run-8:agent:main:main"),
			// A storage failure's text (paths, SQL) never reaches the client.
			"announce:run-7:agent:main:main": errors.New("sqlite.UpdateOutbox: disk image is malformed at /home/u/.switchboard/switchboard.db"),
		},
	}
	e := newEnv(t, envOptions{gateway: func(c *Config) { c.Subagents = fake }})
	c := e.operator()

	t.Run("subagents.list", func(t *testing.T) {
		var res wire.SubagentsListResult
		c.ok(wire.MethodSubagentsList, nil, &res)
		want := []wire.SubagentInfo{{
			ChildRunID: "run-1", ChildSessionKey: "agent:main:subagent:c1", AgentID: "main",
			RequesterKey: "agent:main:main", RequesterDisplay: "main", Task: "count the files",
			Label: "counter", Cleanup: "keep", Mode: "run", RunTimeoutSeconds: 60, CreatedAt: created.UnixMilli(),
			RunStatus: "running", StartedAt: created.UnixMilli() + 5,
		}}
		if diff := cmp.Diff(want, res.Subagents); diff != "" {
			t.Errorf("subagents (-want +got):\n%s", diff)
		}
		c.ok(wire.MethodSubagentsList, map[string]any{"requesterKey": "main", "active": true}, nil)
		c.ok(wire.MethodSubagentsList, map[string]any{"requesterKey": "agent:ops:subagent:x"}, nil)
		c.ok(wire.MethodSubagentsList, map[string]any{"requesterKey": "discord:group:dev"}, nil)
		wantCalls := []string{
			`List("", false)`,
			`List("agent:main:main", true)`,
			`List("agent:ops:subagent:x", false)`,
			`List("agent:main:discord:group:dev", false)`,
		}
		if diff := cmp.Diff(wantCalls, fake.takeCalls()); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
	})

	t.Run("subagents.kill", func(t *testing.T) {
		var res wire.SubagentsKillResult
		c.ok(wire.MethodSubagentsKill, map[string]any{"runId": "run-1"}, &res)
		if diff := cmp.Diff(wire.SubagentsKillResult{OK: true, Killed: []string{"run-1", "run-2"}}, res); diff != "" {
			t.Errorf("kill (-want +got):\n%s", diff)
		}
		// Nothing live to kill: an empty list, not null.
		f := c.call(wire.MethodSubagentsKill, map[string]any{"runId": "done"})
		if !f.OK || string(f.Payload) != `{"ok":true,"killed":[]}` {
			t.Errorf("kill of an ended run = %s %v", f.Payload, f.Error)
		}
		err := c.fail(wire.MethodSubagentsKill, map[string]any{"runId": "ghost"})
		if err.Code != wire.CodeInvalidRequest || err.Message != "no sub-agent run ghost" {
			t.Errorf("kill unknown = %+v", err)
		}
	})

	t.Run("announces.list", func(t *testing.T) {
		fake.takeCalls()
		var res wire.AnnouncesListResult
		c.ok(wire.MethodAnnouncesList, nil, &res)
		want := []wire.AnnounceRow{{
			ID: "announce:run-9:agent:main:main", Kind: "announce", SessionKey: "agent:main:main", RunID: "run-9",
			Status: "dead", Attempts: 7, LastError: "requester busy", CreatedAt: created.UnixMilli(),
			UpdatedAt: created.UnixMilli() + 60_000, NextAttemptAt: created.UnixMilli() + 120_000,
		}}
		if diff := cmp.Diff(want, res.Announces); diff != "" {
			t.Errorf("announces (-want +got):\n%s", diff)
		}
		// Every field is present, deliveredAt as 0 while undelivered.
		f := c.call(wire.MethodAnnouncesList, nil)
		var rows []map[string]any
		var raw struct{ Announces json.RawMessage }
		json.Unmarshal(f.Payload, &raw)
		json.Unmarshal(raw.Announces, &rows)
		if len(rows) != 1 || rows[0]["deliveredAt"] != float64(0) || len(rows[0]) != 11 {
			t.Errorf("announce row = %v", rows)
		}
		for _, st := range []string{"pending", "delivered", "dead", "all"} {
			c.ok(wire.MethodAnnouncesList, map[string]any{"status": st}, nil)
		}
		wantCalls := []string{"Announces([dead])", "Announces([dead])", "Announces([pending])",
			"Announces([delivered])", "Announces([dead])", "Announces([])"}
		if diff := cmp.Diff(wantCalls, fake.takeCalls()); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
		// The page: limit rows, hasMore when more exist.
		fake.mu.Lock()
		one := fake.announces[0]
		fake.announces = []*store.OutboxItem{one, one, one}
		fake.mu.Unlock()
		var page wire.AnnouncesListResult
		c.ok(wire.MethodAnnouncesList, map[string]any{"status": "all", "limit": 2}, &page)
		if len(page.Announces) != 2 || !page.HasMore {
			t.Errorf("limit 2 of 3: %d rows, hasMore %v", len(page.Announces), page.HasMore)
		}
		page = wire.AnnouncesListResult{}
		c.ok(wire.MethodAnnouncesList, map[string]any{"status": "all", "limit": 3}, &page)
		if len(page.Announces) != 3 || page.HasMore {
			t.Errorf("limit 3 of 3: %d rows, hasMore %v", len(page.Announces), page.HasMore)
		}
		if err := c.fail(wire.MethodAnnouncesList, map[string]any{"limit": 0}); err.Code != wire.CodeInvalidRequest {
			t.Errorf("limit 0: %+v", err)
		}
		fake.takeCalls()
		fake.mu.Lock()
		fake.announces = nil
		fake.mu.Unlock()
		f = c.call(wire.MethodAnnouncesList, nil)
		if !f.OK || string(f.Payload) != `{"announces":[]}` {
			t.Errorf("empty announces.list = %s", f.Payload)
		}
	})

	t.Run("announces.redeliver", func(t *testing.T) {
		var res wire.AnnouncesRedeliverResult
		c.ok(wire.MethodAnnouncesRedeliver, map[string]any{"id": "announce:run-9:agent:main:main"}, &res)
		if !res.OK {
			t.Errorf("redeliver = %+v", res)
		}
		for _, tt := range []struct{ id, want string }{
			{"announce:run-8:agent:main:main", "already delivered: announce:run-8:agent:main:main"},
			{"nope", "announce not found: nope"},
		} {
			err := c.fail(wire.MethodAnnouncesRedeliver, map[string]any{"id": tt.id})
			if err.Code != wire.CodeInvalidRequest || err.Message != tt.want {
				t.Errorf("redeliver %s = %+v, want %q", tt.id, err, tt.want)
			}
		}
		if err := c.fail(wire.MethodAnnouncesRedeliver, map[string]any{"id": "announce:run-7:agent:main:main"}); err.Code != wire.CodeUnavailable || err.Message != "internal error" {
			t.Errorf("a storage failure reached the client: %+v", err)
		}
	})

	t.Run("params", func(t *testing.T) {
		for _, tt := range []struct {
			method string
			params any
		}{
			{wire.MethodSubagentsList, map[string]any{"requester": "main"}},
			{wire.MethodSubagentsList, map[string]any{"active": "yes"}},
			{wire.MethodSubagentsKill, nil},
			{wire.MethodSubagentsKill, map[string]any{"runId": ""}},
			{wire.MethodSubagentsKill, map[string]any{"runId": "run-1", "cascade": true}},
			{wire.MethodAnnouncesList, map[string]any{"status": "failed"}},
			{wire.MethodAnnouncesRedeliver, map[string]any{}},
			{wire.MethodAnnouncesRedeliver, map[string]any{"id": "x", "force": true}},
		} {
			err := c.fail(tt.method, tt.params)
			if err.Code != wire.CodeInvalidRequest || !strings.HasPrefix(err.Message, "invalid "+tt.method+" params: ") {
				t.Errorf("%s %v = %+v", tt.method, tt.params, err)
			}
		}
	})

	t.Run("scopes", func(t *testing.T) {
		fake.takeCalls()
		reader := e.with(t).connect(wire.ScopeRead)
		reader.ok(wire.MethodSubagentsList, nil, nil)
		reader.ok(wire.MethodAnnouncesList, nil, nil)
		if err := reader.fail(wire.MethodSubagentsKill, map[string]any{"runId": "run-1"}); err.Code != wire.CodeForbidden || err.Message != "missing scope: operator.write" {
			t.Errorf("reader kill = %+v", err)
		}
		writer := e.with(t).connect(wire.ScopeWrite)
		writer.ok(wire.MethodSubagentsKill, map[string]any{"runId": "done"}, nil)
		if err := writer.fail(wire.MethodAnnouncesRedeliver, map[string]any{"id": "x"}); err.Code != wire.CodeForbidden || err.Message != "missing scope: operator.admin" {
			t.Errorf("writer redeliver = %+v", err)
		}
		wantCalls := []string{`List("", false)`, "Announces([dead])", `Kill("done")`}
		if diff := cmp.Diff(wantCalls, fake.takeCalls()); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
	})
}

func TestSubagentsDisabled(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	for _, tt := range []struct {
		method string
		params any
	}{
		{wire.MethodSubagentsList, nil},
		{wire.MethodSubagentsKill, map[string]any{"runId": "r"}},
		{wire.MethodAnnouncesList, nil},
		{wire.MethodAnnouncesRedeliver, map[string]any{"id": "a"}},
	} {
		err := c.fail(tt.method, tt.params)
		if err.Code != wire.CodeUnavailable || err.Message != "sub-agents are not enabled" {
			t.Errorf("%s = %+v", tt.method, err)
		}
	}
}

// TestSubagentInfoCoversEveryField checks that subagents.list reports
// every field of subagent.Info under the same JSON name, so that a field
// the manager adds is not silently dropped.
func TestSubagentInfoCoversEveryField(t *testing.T) {
	var in subagent.Info
	fill(reflect.ValueOf(&in).Elem())
	want, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(subagentInfo(&in))
	if err != nil {
		t.Fatal(err)
	}
	var wantMap, gotMap map[string]any
	json.Unmarshal(want, &wantMap)
	json.Unmarshal(got, &gotMap)
	if diff := cmp.Diff(wantMap, gotMap); diff != "" {
		t.Errorf("wire.SubagentInfo differs from subagent.Info (-info +wire):\n%s", diff)
	}
}

// fill sets every exported field of a struct to a distinct non-zero value.
func fill(v reflect.Value) {
	for i := range v.NumField() {
		f, sf := v.Field(i), v.Type().Field(i)
		if !sf.IsExported() {
			continue
		}
		switch f.Kind() {
		case reflect.Struct:
			fill(f)
		case reflect.String:
			f.SetString(sf.Name + "-value")
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Bool:
			f.SetBool(true)
		}
	}
}
