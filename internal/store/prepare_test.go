package store

import (
	"encoding/json"
	"testing"
	"time"
)

func TestPrepare(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	it := &OutboxItem{ID: "a", Status: OutboxDelivered}
	if err := PrepareNewOutbox(it, now); err != nil {
		t.Fatal(err)
	}
	want := Millis(now)
	if !it.CreatedAt.Equal(want) || !it.NextAttemptAt.Equal(want) || !it.DeliveredAt.Equal(want) || it.CreatedAt.Location() != time.UTC {
		t.Errorf("outbox defaults = %+v", it)
	}
	if it.CreatedAt.Nanosecond() != 123000000 {
		t.Errorf("not truncated to ms: %v", it.CreatedAt)
	}
	for _, bad := range []*OutboxItem{{}, {ID: "b", Status: "weird"}, {ID: "c", Payload: json.RawMessage(`{`)}} {
		if err := PrepareNewOutbox(bad, now); err == nil {
			t.Errorf("PrepareNewOutbox(%+v) accepted", bad)
		}
	}
	r := &SubagentRun{ChildRunID: "r"}
	if err := PrepareNewSubagent(r, now); err != nil || r.Status != SubagentActive || !r.CreatedAt.Equal(want) {
		t.Errorf("subagent defaults = %+v, %v", r, err)
	}
	for _, bad := range []*SubagentRun{{}, {ChildRunID: "x", Status: "weird"}, {ChildRunID: "y", Payload: json.RawMessage(`[`)}} {
		if err := PrepareNewSubagent(bad, now); err == nil {
			t.Errorf("PrepareNewSubagent(%+v) accepted", bad)
		}
	}
	if !Millis(time.Time{}).IsZero() || PayloadArg(nil) != nil || PayloadArg(json.RawMessage(`{}`)) != "{}" {
		t.Error("Millis or PayloadArg of empty values")
	}
}
