package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/attachments"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// maxBatch bounds how many announces one requester turn carries.
const maxBatch = 1000

// fullScanInterval is how often the dispatcher lists every due announce;
// in between it looks only at requesters known to have some waiting.
const fullScanInterval = time.Second

// dispatchLoop delivers due announces until Close.
func (m *Manager) dispatchLoop() {
	t := time.NewTicker(dispatchInterval)
	defer t.Stop()
	lastFull := time.Time{}
	for {
		if time.Since(lastFull) >= fullScanInterval {
			m.DispatchDue(m.ctx)
			lastFull = time.Now()
		} else {
			m.dispatchTargets(m.ctx)
		}
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		case <-m.wake:
		}
	}
}

// markTarget notes that target has announces waiting.
func (m *Manager) markTarget(target string) {
	m.mu.Lock()
	m.targets[target] = true
	m.mu.Unlock()
	m.kick()
}

// dispatchTargets delivers to the idle requesters known to have announces
// waiting, listing only theirs.
func (m *Manager) dispatchTargets(ctx context.Context) int {
	m.mu.Lock()
	targets := make([]string, 0, len(m.targets))
	for t := range m.targets {
		targets = append(targets, t)
	}
	m.mu.Unlock()
	n := 0
	for _, t := range targets {
		if m.cfg.Runner.Busy(t) {
			continue
		}
		items, err := m.cfg.Store.ListOutbox(ctx, store.OutboxFilter{Kind: KindAnnounce, SessionKey: t, DueBefore: m.cfg.Now()})
		if err != nil {
			return n
		}
		if len(items) == 0 {
			m.mu.Lock()
			delete(m.targets, t)
			m.mu.Unlock()
			continue
		}
		n += m.dispatch(ctx, items)
	}
	return n
}

// DispatchDue delivers the due announces once and returns how many it
// delivered. Announces for one requester are delivered together: when its
// lane is idle, everything pending for it becomes one turn (like the
// reference's "collect" queue mode), so a requester that was busy while its
// children finished gets their results in its next turn, not one turn each.
func (m *Manager) DispatchDue(ctx context.Context) int {
	items, err := m.cfg.Store.ListOutbox(ctx, store.OutboxFilter{Kind: KindAnnounce, DueBefore: m.cfg.Now()})
	if err != nil {
		if ctx.Err() == nil {
			m.log.Error("announce dispatch: list failed", "err", err)
		}
		return 0
	}
	return m.dispatch(ctx, items)
}

// dispatch delivers items, grouped by requester.
func (m *Manager) dispatch(ctx context.Context, items []*store.OutboxItem) int {
	// Group by target, keeping due order. A busy target's announces are
	// skipped without any further I/O: they go once its lane is idle.
	var order []string
	groups := map[string][]pending{}
	for _, it := range items {
		if ctx.Err() != nil {
			return 0
		}
		var a Announce
		if err := json.Unmarshal(it.Payload, &a); err != nil {
			m.dead(it, fmt.Errorf("bad announce payload: %w", err))
			continue
		}
		if !a.Skip && m.cfg.Runner.Busy(it.SessionKey) {
			continue
		}
		if m.pendingDescendants(ctx, a.ChildSessionKey) {
			continue // completion waits for the child's own children
		}
		rec, err := m.record(ctx, a.ChildRunID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			m.retry(it, err)
			continue
		}
		if a.Skip {
			if err := m.markDelivered(ctx, it.ID); err != nil {
				m.retry(it, err)
				continue
			}
			m.afterAnnounce(ctx, rec)
			continue
		}
		target, err := m.route(ctx, it.SessionKey, rec)
		if err != nil {
			m.retry(it, err)
			continue
		}
		if _, ok := groups[target]; !ok {
			order = append(order, target)
		}
		groups[target] = append(groups[target], pending{it, a, rec})
	}
	n := 0
	for _, target := range order {
		if m.cfg.Runner.Busy(target) {
			continue // delivered once the lane is idle; nothing written meanwhile
		}
		g := groups[target]
		for len(g) > 0 && ctx.Err() == nil {
			batch := g[:min(len(g), maxBatch)]
			g = g[len(batch):]
			delivered, err := m.deliverBatch(ctx, target, batch)
			if err != nil {
				for _, p := range batch {
					m.retry(p.item, err)
				}
				continue
			}
			n += delivered
		}
	}
	return n
}

// pending is one announce ready for delivery.
type pending struct {
	item *store.OutboxItem
	a    Announce
	rec  *Record
}

// deliverBatch posts announces to target as one internal run. Exactly once:
// every item is first claimed for the batch's run id (stored in its
// payload), and Submit with a known run id returns the existing run — so a
// crash at any point neither loses a result nor posts it twice.
func (m *Manager) deliverBatch(ctx context.Context, target string, batch []pending) (int, error) {
	runID := batch[0].a.BatchRunID
	if runID == "" {
		if len(batch) == 1 {
			runID = announceRunID(batch[0].a.ChildSessionKey, batch[0].a.ChildRunID)
		} else {
			runID = fmt.Sprintf("announce:v1:batch:%s:%d", batch[0].a.ChildRunID, len(batch))
		}
	}
	var texts []string
	var claimed []pending
	for _, p := range batch {
		if p.a.BatchRunID != "" && p.a.BatchRunID != runID {
			continue // claimed by another batch: delivered with that one
		}
		if p.a.BatchRunID == "" || p.item.SessionKey != target {
			a := p.a
			a.BatchRunID = runID
			payload, err := json.Marshal(a)
			if err != nil {
				return 0, err
			}
			if _, err := m.cfg.Store.UpdateOutbox(ctx, p.item.ID, func(x *store.OutboxItem) error {
				x.Payload, x.SessionKey = payload, target
				return nil
			}); err != nil {
				return 0, err
			}
		}
		texts = append(texts, p.a.Message)
		claimed = append(claimed, p)
	}
	if len(claimed) == 0 {
		return 0, nil
	}
	in := agent.Input{
		RunID:      runID,
		SessionKey: target,
		AgentID:    sessionkey.AgentID(target),
		Message:    strings.Join(texts, "\n\n---\n\n"),
		Lane:       LaneAnnounce,
		Channel:    "webchat",
		Provenance: &agent.Provenance{
			Kind: transcript.ProvenanceInterSession, SourceSessionKey: claimed[0].a.ChildSessionKey,
			SourceChannel: "webchat", SourceTool: announceSource,
		},
	}
	in.IdempotencyKey = in.RunID
	if _, _, err := m.cfg.Runner.Submit(ctx, in); err != nil {
		return 0, err
	}
	for _, p := range claimed {
		if err := m.markDelivered(ctx, p.item.ID); err != nil {
			return 0, err
		}
		m.afterAnnounce(ctx, p.rec)
	}
	return len(claimed), nil
}

// route picks where an announce goes: the requester, or — when that
// session is gone — the requester's own requester, up the chain; failing
// that, the requester agent's main session, so a result is never dropped.
func (m *Manager) route(ctx context.Context, target string, rec *Record) (string, error) {
	seen := map[string]bool{}
	for key := target; key != "" && !seen[key]; {
		seen[key] = true
		_, err := m.cfg.Store.GetSession(ctx, key)
		if err == nil {
			return key, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return "", err
		}
		// The requester's parent: captured at spawn time, else — for a
		// requester that was itself a sub-agent — from its registry record.
		next := ""
		if rec != nil && key == rec.RequesterKey {
			next = rec.RequesterParent
		}
		if next == "" {
			next = m.parentOf(ctx, key)
		}
		key = next
	}
	agentID := sessionkey.AgentID(target)
	return sessionkey.MainKey(agentID, m.cfg.Config.MainKey()), nil
}

// parentOf returns the requester that spawned child session key, or "".
// It scans the registry, which is fine for this rare path.
func (m *Manager) parentOf(ctx context.Context, key string) string {
	recs, err := m.cfg.Store.ListOutbox(ctx, store.OutboxFilter{Kind: KindSubagent})
	if err != nil {
		return ""
	}
	for _, r := range recs {
		var other Record
		if json.Unmarshal(r.Payload, &other) == nil && other.ChildSessionKey == key {
			return other.RequesterKey
		}
	}
	return ""
}

// pendingDescendants reports whether a child still has running children of
// its own (its completion waits for them, as the reference's does).
func (m *Manager) pendingDescendants(ctx context.Context, childKey string) bool {
	m.mu.Lock()
	n := len(m.active[childKey])
	m.mu.Unlock()
	return n > 0
}

// afterAnnounce runs the cleanup of a child whose announce was handled:
// cleanup "delete" removes the child session (and its transcript); the
// attachments go unless kept.
func (m *Manager) afterAnnounce(ctx context.Context, rec *Record) {
	if rec == nil {
		return
	}
	keepAttachments := rec.Cleanup == "keep" && rec.RetainAttachments
	if rec.AttachmentsDir != "" && !keepAttachments {
		if err := attachments.Remove(rec.Workspace, rec.AttachmentsDir); err != nil {
			m.log.Warn("attachments not removed", "dir", rec.AttachmentsDir, "err", err)
		}
	}
	if rec.Cleanup == "delete" && rec.Mode != "session" {
		m.retire(ctx, rec)
	}
}

// retire deletes a child session and closes its registry record.
func (m *Manager) retire(ctx context.Context, rec *Record) {
	if err := m.cfg.Store.DeleteSession(ctx, rec.ChildSessionKey, true); err != nil && !errors.Is(err, store.ErrNotFound) {
		m.log.Warn("child session not deleted", "child", rec.ChildSessionKey, "err", err)
		return
	}
	if rec.AttachmentsDir != "" {
		attachments.Remove(rec.Workspace, rec.AttachmentsDir)
	}
	if err := m.markDelivered(ctx, registryID(rec.ChildRunID)); err != nil {
		m.log.Warn("sub-agent record not closed", "runId", rec.ChildRunID, "err", err)
	}
}

func (m *Manager) record(ctx context.Context, childRunID string) (*Record, error) {
	it, err := m.cfg.Store.GetOutbox(ctx, registryID(childRunID))
	if err != nil {
		return nil, err
	}
	var rec Record
	if err := json.Unmarshal(it.Payload, &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

func (m *Manager) markDelivered(ctx context.Context, id string) error {
	_, err := m.cfg.Store.UpdateOutbox(ctx, id, func(x *store.OutboxItem) error {
		x.Status, x.DeliveredAt, x.LastError = store.OutboxDelivered, m.cfg.Now(), ""
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// retry records a failed attempt with exponential backoff. Nothing is
// dropped after N tries: an item becomes a dead letter only once it is
// older than the announce expiry.
func (m *Manager) retry(it *store.OutboxItem, cause error) {
	if m.ctx.Err() != nil {
		return
	}
	now := m.cfg.Now()
	_, err := m.cfg.Store.UpdateOutbox(m.ctx, it.ID, func(x *store.OutboxItem) error {
		x.Attempts++
		x.LastError = cause.Error()
		if now.Sub(x.CreatedAt) > m.cfg.AnnounceExpiry {
			x.Status = store.OutboxDead
			return nil
		}
		backoff := time.Second << min(x.Attempts-1, 6)
		x.NextAttemptAt = now.Add(min(backoff, maxBackoff))
		return nil
	})
	if err != nil {
		m.log.Error("announce retry not recorded", "id", it.ID, "err", err)
		return
	}
	m.log.Warn("announce delivery failed; will retry", "id", it.ID, "err", cause)
}

func (m *Manager) dead(it *store.OutboxItem, cause error) error {
	_, err := m.cfg.Store.UpdateOutbox(m.ctx, it.ID, func(x *store.OutboxItem) error {
		x.Status, x.LastError = store.OutboxDead, cause.Error()
		return nil
	})
	if err != nil {
		return err
	}
	return nil
}

// DeadLetters lists announces that expired undelivered.
func (m *Manager) DeadLetters(ctx context.Context) ([]*store.OutboxItem, error) {
	return m.cfg.Store.ListOutbox(ctx, store.OutboxFilter{Kind: KindAnnounce, Statuses: []store.OutboxStatus{store.OutboxDead}})
}

// Redeliver puts a dead (or any undelivered) announce back in the queue.
func (m *Manager) Redeliver(ctx context.Context, id string) error {
	_, err := m.cfg.Store.UpdateOutbox(ctx, id, func(x *store.OutboxItem) error {
		if x.Kind != KindAnnounce {
			return fmt.Errorf("not an announce: %s", id)
		}
		if x.Status == store.OutboxDelivered {
			return fmt.Errorf("already delivered: %s", id)
		}
		x.Status, x.Attempts, x.NextAttemptAt = store.OutboxPending, 0, m.cfg.Now()
		x.CreatedAt = m.cfg.Now() // a fresh expiry window
		return nil
	})
	if err == nil {
		m.kick()
	}
	return err
}

// sweepLoop archives finished children until Close.
func (m *Manager) sweepLoop() {
	t := time.NewTicker(m.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
			m.Sweep(m.ctx)
		}
	}
}

// Sweep archives every run-mode child whose archive time has passed: its
// session and transcript are deleted and its attachments removed —
// regardless of cleanup "keep" (the reference's behaviour); session-mode
// children are never archived. It returns how many it archived.
func (m *Manager) Sweep(ctx context.Context) int {
	recs, err := m.cfg.Store.ListOutbox(ctx, store.OutboxFilter{Kind: KindSubagent, Statuses: []store.OutboxStatus{store.OutboxPending}})
	if err != nil {
		return 0
	}
	now := m.cfg.Now().UnixMilli()
	n := 0
	for _, it := range recs {
		var rec Record
		if json.Unmarshal(it.Payload, &rec) != nil || rec.Mode == "session" || rec.ArchiveAtMs == 0 || rec.ArchiveAtMs > now {
			continue
		}
		run, err := m.cfg.Store.GetRun(ctx, rec.ChildRunID)
		if err == nil && !run.Status.Terminal() {
			continue // still running: archived once it ends and the time has passed
		}
		m.retire(ctx, &rec)
		n++
	}
	return n
}

func isSkip(reply, token string) bool { return strings.TrimSpace(reply) == token }
