package subagent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/attachments"
	"github.com/switchboardhq/switchboard/internal/outbox"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/telemetry"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// maxBatch bounds how many announces one requester turn carries.
const maxBatch = 1000

// AnnounceHandler is the outbox handler that delivers announces. Register
// it with the one outbox dispatcher, the manager's Config.Outbox.
func (m *Manager) AnnounceHandler() outbox.Handler {
	return outbox.Handler{Kind: KindAnnounce, Batch: m.deliverAnnounces, Expiry: m.cfg.AnnounceExpiry, Retention: announceRetention}
}

// deliverAnnounces delivers due announces, grouped by requester: when its
// lane is idle, everything pending for it becomes one turn (like the
// reference's "collect" queue mode), so a requester that was busy while its
// children finished gets their results in its next turn, not one turn
// each. A busy requester whose queue mode is steer (the default) takes them
// into its active run, before its next model call; other busy requesters'
// announces are deferred until the lane is idle.
func (m *Manager) deliverAnnounces(ctx context.Context, items []*store.OutboxItem) map[string]error {
	if !m.cfg.Shared {
		m.delivering.Lock()
		defer m.delivering.Unlock()
	}
	out := make(map[string]error, len(items))
	var order []string
	groups := map[string][]pending{}
	steers := map[string]bool{}
	waits := func(key string) bool {
		if !m.cfg.Runner.Busy(key) {
			return false
		}
		s, ok := steers[key]
		if !ok {
			q, err := m.cfg.Runner.QueueSettings(ctx, key, "", sessionkey.InternalChannel)
			s = err == nil && q.Mode == policy.QueueSteer
			steers[key] = s
		}
		return !s
	}
	for _, it := range items {
		if ctx.Err() != nil {
			return out
		}
		var a Announce
		if err := json.Unmarshal(it.Payload, &a); err != nil {
			out[it.ID] = outbox.Permanent(fmt.Errorf("bad announce payload: %w", err))
			continue
		}
		if !a.Skip && waits(it.SessionKey) {
			out[it.ID] = outbox.ErrDefer
			continue
		}
		if m.pendingDescendants(a.ChildSessionKey) {
			out[it.ID] = outbox.ErrDefer // completion waits for the child's own children
			continue
		}
		rec, err := m.record(ctx, a.ChildRunID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			out[it.ID] = err
			continue
		}
		if a.Skip {
			out[it.ID] = nil
			m.afterAnnounce(ctx, rec)
			continue
		}
		target, err := m.route(ctx, it.SessionKey, rec)
		if err != nil {
			out[it.ID] = err
			continue
		}
		if _, ok := groups[target]; !ok {
			order = append(order, target)
		}
		groups[target] = append(groups[target], pending{it, a, rec})
	}
	for _, target := range order {
		if waits(target) {
			for _, p := range groups[target] {
				out[p.item.ID] = outbox.ErrDefer // delivered once the lane is idle
			}
			continue
		}
		g := groups[target]
		for len(g) > 0 && ctx.Err() == nil {
			batch := g[:min(len(g), maxBatch)]
			g = g[len(batch):]
			claimed, err := m.deliverBatch(ctx, target, batch)
			for _, p := range batch {
				switch {
				case err != nil:
					out[p.item.ID] = err
				case claimed[p.item.ID]:
					out[p.item.ID] = nil
					m.afterAnnounce(ctx, p.rec)
				default:
					out[p.item.ID] = outbox.ErrDefer // claimed by another batch
				}
			}
		}
	}
	return out
}

// staleClaim is how old a batch claim without its run must be before a
// dispatcher of another node takes it over (its own dispatcher stopped
// between the claim and the run).
const staleClaim = 30 * time.Second

// abandoned reports whether no one is at work on a's batch claim, so that
// it need not wait staleClaim to be taken over: the claim was made by a
// process of this node that is not delivering it (an earlier process —
// the node restarted with its id, so the process that claimed is gone —
// or this one, whose delivery failed after the claim), or by a node whose
// lease ended (Config.NodeAlive): it was killed or cut off, and its other
// work is adopted at the same point.
func (m *Manager) abandoned(ctx context.Context, a Announce) bool {
	if m.cfg.NodeID == "" {
		return false
	}
	if a.ClaimedBy == m.claimer {
		m.mu.Lock()
		defer m.mu.Unlock()
		return !m.claiming[a.BatchRunID]
	}
	// The process part has no slash; a node id may.
	i := strings.LastIndexByte(a.ClaimedBy, '/')
	if i < 0 {
		return false
	}
	node := a.ClaimedBy[:i]
	if node == m.cfg.NodeID {
		return true
	}
	if m.cfg.NodeAlive == nil {
		return false
	}
	alive, err := m.cfg.NodeAlive(ctx, node)
	if err != nil {
		m.log.Warn("announce claim: node liveness unknown; the claim is taken over once stale", "node", node, "err", err)
		return false
	}
	return !alive
}

// mayAct reports whether this node may claim and submit a batch now: not
// when its lease is about to end unrenewed (Config.NodeValid).
func (m *Manager) mayAct() bool {
	return m.cfg.NodeValid == nil || m.cfg.NodeValid()
}

// errBatchClaimed: the announce was claimed for another batch's run.
var errBatchClaimed = errors.New("subagent: announce claimed by another batch")

// pending is one announce ready for delivery.
type pending struct {
	item *store.OutboxItem
	a    Announce
	rec  *Record
}

// deliverBatch posts announces to target as one internal run. Exactly once:
// every item is first claimed for the batch's run id (stored in its
// payload), the run names the items it carries (Input.Carries), Submit
// with a known run id returns the existing run, and a batch's run id is
// never changed once claimed, not even by a takeover: at most one run
// carries an item, and an item is settled only by the run that carries
// it. So neither a crash nor a stalled dispatcher that resumes after
// another took its claims over (SIGSTOP, a partition) loses a result or
// posts it twice.
//
// On a store no other node delivers from (not Config.Shared), a lone
// announce is not claimed: its run id is its own (announceRunID), so a
// repeat of its delivery finds its run, and a later batch that takes it
// with others first looks for that run (loneDelivered) and settles it
// without posting it again. That is one commit less between a child's end
// and its requester's turn.
func (m *Manager) deliverBatch(ctx context.Context, target string, batch []pending) (map[string]bool, error) {
	// A batch claimed before (by a dispatcher that stopped before it
	// settled) is delivered again under its run id, with the items
	// claimed for it and no others: its run may exist already.
	reuse := batch[0].a.BatchRunID
	if reuse != "" {
		switch run, err := m.cfg.Store.GetRun(ctx, reuse); {
		case err == nil:
			// Its run exists: settle the items it carries.
			var ids []string
			for _, p := range batch {
				if p.a.BatchRunID == reuse {
					ids = append(ids, p.item.ID)
				}
			}
			return m.settle(ctx, run, ids)
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		case m.cfg.Shared && time.Since(batch[0].item.UpdatedAt) < staleClaim && !m.abandoned(ctx, batch[0].a):
			// Another node's dispatcher may be claiming for it now.
			return nil, nil
		}
		// Taken over under the same run id: the dispatcher that claimed
		// may still make that run (it stalled between its claims and its
		// run), and then one of the two is the existing run of the other.
	}
	if !m.mayAct() {
		return nil, outbox.ErrDefer
	}
	runID := reuse
	if runID == "" {
		if len(batch) == 1 {
			runID = announceRunID(batch[0].a.ChildSessionKey, batch[0].a.ChildRunID)
		} else {
			// A new name for every batch: two dispatchers (on two gateway
			// nodes) that batch different sets never share a run.
			runID = "announce:v1:batch:" + batch[0].a.ChildRunID + ":" + uuid.NewString()
		}
	}
	m.mu.Lock()
	m.claiming[runID] = true
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.claiming, runID)
		m.mu.Unlock()
	}()
	var todo []claim
	var settled []string // lone announces delivered before, alone
	for _, p := range batch {
		if p.a.BatchRunID != "" && p.a.BatchRunID != runID {
			continue // claimed by another batch: delivered with that one
		}
		if reuse != "" && p.a.BatchRunID == "" {
			continue // goes with a new batch
		}
		lone := !m.cfg.Shared && p.a.BatchRunID == ""
		if lone && len(batch) > 1 {
			done, err := m.loneDelivered(ctx, p.a)
			if err != nil {
				return nil, err
			}
			if done {
				settled = append(settled, p.item.ID)
				continue
			}
		}
		c := claim{p: p}
		if lone && len(batch) == 1 {
			// Delivered unclaimed, under its own run id.
		} else if p.a.BatchRunID != runID || p.item.SessionKey != target || p.a.ClaimedBy != m.claimer {
			a := p.a
			a.BatchRunID, a.ClaimedBy = runID, m.claimer
			payload, err := json.Marshal(a)
			if err != nil {
				return nil, err
			}
			c.payload = payload
		}
		todo = append(todo, c)
	}
	var texts []string
	var claimed []pending
	// On a store no other node delivers from, and that makes a run's
	// claims in the transaction that stores it, the claims go with the
	// batch's run: one commit less before the requester's turn. With
	// other nodes a claim may be refused (another dispatcher's batch
	// took the item), which must be known before the run's text is.
	var withRun *store.RunClaims
	if !m.cfg.Shared && store.ClaimsWithRuns(m.cfg.Store) && slices.ContainsFunc(todo, func(c claim) bool { return c.payload != nil }) {
		withRun = &store.RunClaims{RunID: runID}
		for _, c := range todo {
			if c.payload != nil {
				withRun.Claims = append(withRun.Claims, store.OutboxChange{ID: c.p.item.ID, Apply: claimApply(runID, target, c)})
			}
			texts = append(texts, c.p.a.Message)
			claimed = append(claimed, c.p)
		}
		ctx = store.WithRunClaims(ctx, withRun)
	} else {
		for i, err := range m.claimAll(ctx, target, runID, todo) {
			if errors.Is(err, errBatchClaimed) {
				continue // delivered with the other batch
			}
			if err != nil {
				return nil, err
			}
			texts = append(texts, todo[i].p.a.Message)
			claimed = append(claimed, todo[i].p)
		}
	}
	if len(claimed) == 0 {
		return settledIDs(settled, nil), nil
	}
	in := agent.Input{
		RunID:      runID,
		SessionKey: target,
		AgentID:    sessionkey.AgentID(target),
		Message:    strings.Join(texts, "\n\n---\n\n"),
		Lane:       LaneAnnounce,
		Channel:    sessionkey.InternalChannel,
		Provenance: &agent.Provenance{
			Kind: transcript.ProvenanceInterSession, SourceSessionKey: claimed[0].a.ChildSessionKey,
			SourceChannel: sessionkey.InternalChannel, SourceTool: announceSource,
		},
	}
	in.IdempotencyKey = in.RunID
	for _, p := range claimed {
		in.Carries = append(in.Carries, p.item.ID)
		if len(claimed) > 1 {
			in.Provenance.SourceSessionKeys = append(in.Provenance.SourceSessionKeys, p.a.ChildSessionKey)
		}
	}
	// The announce continues the chain of causes of the (first) child's
	// run: whatever the requester does with it is part of the same chain,
	// and as untrusted as the least-trusted child it carries.
	origin := ""
	for _, p := range claimed {
		origin = cmp.Or(origin, p.a.Untrusted)
	}
	if child, err := m.cfg.Store.GetRun(ctx, claimed[0].a.ChildRunID); err == nil {
		var cin agent.Input
		if json.Unmarshal(child.Input, &cin) == nil {
			origin = cmp.Or(origin, cin.Untrusted())
		}
		if cin.Chain != nil && cin.Chain.ID != "" {
			c := cin.Chain
			_, span := m.cfg.Tracer.StartStep(ctx, telemetry.Step{Name: "subagent.announce", From: claimed[0].a.ChildSessionKey, To: target,
				RunID: runID, Link: telemetry.Link{ChainID: c.ID, Parent: c.Span, Hops: c.Hops}})
			defer span.End(nil)
			next := c.Next(target)
			if id := span.ID(); id != "" {
				next.Span = id // the announce run continues under the announce span
			}
			in.Chain = &next
		}
	}
	if origin != "" {
		if in.Chain == nil {
			in.Chain = &tools.Chain{ID: runID, Path: []string{target}}
		}
		c := in.Chain.Taint(origin)
		in.Chain = &c
	}
	if !m.mayAct() {
		// The claims stay; this node's next attempt, or another node's
		// once the lease ended, takes them over.
		return nil, outbox.ErrDefer
	}
	// A requester that is mid-run takes the results as its own messages
	// are queued (by default steered into the active run, so it sees them
	// before its next model call); a result never interrupts that run and
	// is never dropped at the queue's cap (admission's announce rule).
	t, err := m.cfg.Admit.Accept(ctx, admission.Request{Origin: admission.OriginAnnounce, Input: in})
	if withRun != nil && errors.Is(err, errBatchClaimed) {
		// An item changed since it was listed: the next pass lists the
		// batch again, as it is now.
		return nil, outbox.ErrDefer
	}
	if err != nil {
		return nil, err
	}
	if withRun != nil && t.Created && !withRun.Stored() {
		// The run was stored without its claims (by a path that does not
		// make them): they are made now, as they were before the run.
		for i, err := range m.claimAll(ctx, target, runID, todo) {
			if err != nil {
				m.log.Error("announce claim not stored with its batch run", "id", todo[i].p.item.ID, "runId", runID, "err", err)
			}
		}
	}
	if !t.Created && t.Run != nil {
		// Another dispatcher made the run (it took these claims over, or
		// was taken over): it carries what that one claimed.
		ids, err := m.settle(ctx, t.Run, in.Carries)
		if err != nil {
			return nil, err
		}
		for _, id := range settled {
			ids[id] = true
		}
		return ids, nil
	}
	return settledIDs(settled, claimed), nil
}

// claim is one announce a batch takes: payload, when set, is the item's
// payload claimed for the batch, to be written before the batch's run.
type claim struct {
	p       pending
	payload []byte
}

// maxClaims bounds how many claims of one batch are written at once.
const maxClaims = 16

// claimAll writes the claims of todo (those with a payload) side by side
// and returns each one's outcome, in todo's order: each claim is its own
// compare-and-set, and on a store with a group commit (SQLite) the claims
// handed in together share one commit instead of one each, between the
// children's ends and their requester's turn.
func (m *Manager) claimAll(ctx context.Context, target, runID string, todo []claim) []error {
	errs := make([]error, len(todo))
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxClaims)
	n := 0
	for _, c := range todo {
		if c.payload != nil {
			n++
		}
	}
	for i, c := range todo {
		switch {
		case c.payload == nil:
		case n == 1:
			errs[i] = m.claimFor(ctx, target, runID, c)
		default:
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				errs[i] = m.claimFor(ctx, target, runID, c)
			})
		}
	}
	wg.Wait()
	return errs
}

// claimFor claims c's item for run runID, moved to target: a
// compare-and-set, since another dispatcher (another gateway node) may
// have claimed the item for its own batch meanwhile (errBatchClaimed).
func (m *Manager) claimFor(ctx context.Context, target, runID string, c claim) error {
	_, err := m.cfg.Store.UpdateOutbox(ctx, c.p.item.ID, claimApply(runID, target, c))
	return err
}

// claimApply is the compare-and-set of c's claim for run runID, moved to
// target, on the stored item.
func claimApply(runID, target string, c claim) func(x *store.OutboxItem) error {
	return func(x *store.OutboxItem) error {
		var cur Announce
		if x.Status != store.OutboxPending || (json.Unmarshal(x.Payload, &cur) == nil && cur.BatchRunID != "" && cur.BatchRunID != runID) {
			return errBatchClaimed
		}
		x.Payload, x.SessionKey = c.payload, target
		return nil
	}
}

// settledIDs is deliverBatch's answer: the ids of the items it settles.
func settledIDs(settled []string, claimed []pending) map[string]bool {
	ids := make(map[string]bool, len(settled)+len(claimed))
	for _, id := range settled {
		ids[id] = true
	}
	for _, p := range claimed {
		ids[p.item.ID] = true
	}
	return ids
}

// loneDelivered reports whether an unclaimed announce was delivered
// alone before (on a store no other node delivers from, a lone announce
// is not claimed): its own run exists. Its settle was then lost (a crash,
// a failed write), and it is settled without being posted again.
func (m *Manager) loneDelivered(ctx context.Context, a Announce) (bool, error) {
	_, err := m.cfg.Store.GetRun(ctx, announceRunID(a.ChildSessionKey, a.ChildRunID))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	}
	return false, err
}

// settle returns which of the items ids, claimed for run, run carries
// (Input.Carries; a run stored without it, before it was recorded,
// carries every item claimed for it), and hands the others' claims back
// so that a later batch delivers them: they were claimed for the run
// after another dispatcher made it without them.
func (m *Manager) settle(ctx context.Context, run *store.Run, ids []string) (map[string]bool, error) {
	var in agent.Input
	if err := json.Unmarshal(run.Input, &in); err != nil || in.Carries == nil {
		out := make(map[string]bool, len(ids))
		for _, id := range ids {
			out[id] = true
		}
		return out, nil
	}
	carried := make(map[string]bool, len(in.Carries))
	for _, id := range in.Carries {
		carried[id] = true
	}
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		if carried[id] {
			out[id] = true
			continue
		}
		_, err := m.cfg.Store.UpdateOutbox(ctx, id, func(x *store.OutboxItem) error {
			var a Announce
			if x.Status != store.OutboxPending || json.Unmarshal(x.Payload, &a) != nil || a.BatchRunID != run.RunID {
				return errBatchClaimed // settled, or claimed again meanwhile
			}
			a.BatchRunID, a.ClaimedBy = "", ""
			payload, err := json.Marshal(a)
			if err != nil {
				return err
			}
			x.Payload = payload
			return nil
		})
		if err != nil && !errors.Is(err, errBatchClaimed) {
			return nil, fmt.Errorf("announce %s: hand its claim back: %w", id, err)
		}
	}
	return out, nil
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
	return sessionkey.MainKey(agentID, m.cfg.Settings.MainKey), nil
}

// parentOf returns the requester that spawned child session key, or ""
// (from the registry's child index).
func (m *Manager) parentOf(ctx context.Context, key string) string {
	recs, err := m.cfg.Store.ListSubagents(ctx, store.SubagentFilter{ChildSessionKey: key, Limit: 1})
	if err != nil {
		m.log.Warn("sub-agent parent lookup failed", "child", key, "err", err)
		return ""
	}
	if len(recs) == 0 {
		return ""
	}
	return recs[0].RequesterKey
}

// pendingDescendants reports whether a child still has running children of
// its own (its completion waits for them, as the reference's does).
func (m *Manager) pendingDescendants(childKey string) bool {
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
		if err := attachments.Remove(rec.Workspace, rec.AttachmentsDir); err != nil {
			m.log.Warn("attachments not removed", "dir", rec.AttachmentsDir, "err", err)
		}
	}
	if err := m.setRetired(ctx, rec.ChildRunID); err != nil {
		m.log.Warn("sub-agent record not closed", "runId", rec.ChildRunID, "err", err)
	}
}

// setRetired marks a registry row retired (a missing row is not an error).
func (m *Manager) setRetired(ctx context.Context, childRunID string) error {
	_, err := m.cfg.Store.UpdateSubagent(ctx, childRunID, func(r *store.SubagentRun) error {
		r.Status = store.SubagentRetired
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// record returns the registry record of a child run; ErrNotFound if none.
func (m *Manager) record(ctx context.Context, childRunID string) (*Record, error) {
	row, err := m.cfg.Store.GetSubagent(ctx, childRunID)
	if err != nil {
		return nil, err
	}
	return decodeRecord(row)
}

func decodeRecord(row *store.SubagentRun) (*Record, error) {
	var rec Record
	if err := json.Unmarshal(row.Payload, &rec); err != nil {
		return nil, fmt.Errorf("sub-agent record %s: %w", row.ChildRunID, err)
	}
	return &rec, nil
}

// deadLetters lists announces that expired undelivered.
func (m *Manager) deadLetters(ctx context.Context) ([]*store.OutboxItem, error) {
	return m.cfg.Store.ListOutbox(ctx, store.OutboxFilter{Kind: KindAnnounce, Statuses: []store.OutboxStatus{store.OutboxDead}})
}

// Redeliver puts a dead (or any undelivered) outbox item — an announce or
// an agent-to-agent flow — back in the queue. Its errors other than the
// store's are safe to show to the caller (the dispatcher checks the item
// in the same write that requeues it).
func (m *Manager) Redeliver(ctx context.Context, id string) error {
	if m.cfg.Outbox == nil {
		return errors.New("subagent: no outbox dispatcher")
	}
	if _, err := m.cfg.Outbox.Redeliver(ctx, id); err != nil {
		return err
	}
	return nil
}

// sweepLoop archives finished children until Close; every reconcileEvery
// sweeps it also asks for a reconcile pass, which writes any announce a
// failed write left out (on every backend, one node or several).
func (m *Manager) sweepLoop() {
	t := time.NewTicker(m.cfg.SweepInterval)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
			m.Sweep(m.ctx)
			if n%reconcileEvery == 0 {
				m.ReconcileSoon()
			}
		}
	}
}

// Sweep archives every run-mode child whose archive time has passed: its
// session and transcript are deleted and its attachments removed —
// regardless of cleanup "keep" (the reference's behaviour); session-mode
// children are never archived. It returns how many it archived.
func (m *Manager) Sweep(ctx context.Context) int {
	rows, err := m.cfg.Store.ListSubagents(ctx, store.SubagentFilter{
		Statuses: []store.SubagentStatus{store.SubagentActive}, ArchiveDueBefore: m.cfg.Now(),
	})
	if err != nil {
		if ctx.Err() == nil {
			m.log.Error("archive sweep: list failed", "err", err)
		}
		return 0
	}
	n := 0
	for _, row := range rows {
		rec, err := decodeRecord(row)
		if err != nil {
			m.log.Error("archive sweep: bad sub-agent record", "err", err)
			continue
		}
		if rec.Mode == "session" {
			continue
		}
		run, err := m.cfg.Store.GetRun(ctx, rec.ChildRunID)
		if err == nil && !run.Status.Terminal() {
			continue // still running: archived once it ends and the time has passed
		}
		m.retire(ctx, rec)
		n++
	}
	return n
}
