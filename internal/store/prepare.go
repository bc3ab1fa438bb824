package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The rules below are the store contract's, shared by every backend: the
// defaults Put methods apply, what a row must satisfy, and the stored time
// resolution. Backends only turn the prepared rows into their own SQL.

// Millis returns t as every backend stores it: UTC, truncated to the
// millisecond; the zero time stays zero.
func Millis(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.UnixMilli(t.UnixMilli()).UTC()
}

// PrepareNewOutbox applies PutOutbox's defaults to it (a caller's copy) with
// now as the current time, then prepares it as PrepareOutbox does.
func PrepareNewOutbox(it *OutboxItem, now time.Time) error {
	if it.ID == "" {
		return errors.New("empty outbox item id")
	}
	if it.Status == "" {
		it.Status = OutboxPending
	}
	if it.CreatedAt.IsZero() {
		it.CreatedAt = now
	}
	if it.UpdatedAt.IsZero() {
		it.UpdatedAt = now
	}
	if it.NextAttemptAt.IsZero() {
		it.NextAttemptAt = it.CreatedAt
	}
	return PrepareOutbox(it, now)
}

// PrepareOutbox sets a delivered item's zero DeliveredAt to now, truncates
// its times to the stored resolution and validates its status and payload.
func PrepareOutbox(it *OutboxItem, now time.Time) error {
	if it.Status == OutboxDelivered && it.DeliveredAt.IsZero() {
		it.DeliveredAt = now
	}
	it.NextAttemptAt, it.CreatedAt = Millis(it.NextAttemptAt), Millis(it.CreatedAt)
	it.UpdatedAt, it.DeliveredAt = Millis(it.UpdatedAt), Millis(it.DeliveredAt)
	if !it.Status.Valid() {
		return fmt.Errorf("outbox item %q: unknown status %q", it.ID, it.Status)
	}
	if len(it.Payload) > 0 && !json.Valid(it.Payload) {
		return fmt.Errorf("outbox item %q: payload is not valid JSON", it.ID)
	}
	return nil
}

// PrepareNewSubagent applies PutSubagent's defaults to r (a caller's copy)
// with now as the current time, then prepares it as PrepareSubagent does.
func PrepareNewSubagent(r *SubagentRun, now time.Time) error {
	if r.Status == "" {
		r.Status = SubagentActive
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = now
	}
	return PrepareSubagent(r)
}

// PrepareSubagent truncates r's times to the stored resolution and
// validates its id, status and payload.
func PrepareSubagent(r *SubagentRun) error {
	if r.ChildRunID == "" {
		return errors.New("empty child run id")
	}
	if !r.Status.Valid() {
		return fmt.Errorf("sub-agent %q: unknown status %q", r.ChildRunID, r.Status)
	}
	if len(r.Payload) > 0 && !json.Valid(r.Payload) {
		return fmt.Errorf("sub-agent %q: payload is not valid JSON", r.ChildRunID)
	}
	r.ArchiveAt, r.CreatedAt, r.UpdatedAt = Millis(r.ArchiveAt), Millis(r.CreatedAt), Millis(r.UpdatedAt)
	return nil
}

// PayloadArg is a payload as a SQL argument: nil (NULL) when empty, else
// its text.
func PayloadArg(p json.RawMessage) any {
	if len(p) == 0 {
		return nil
	}
	return string(p)
}
