package remote

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/a2a/outbound"
	"github.com/switchboardhq/switchboard/internal/a2a/wire"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/outbox"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools/sessions"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// Durable fire-and-forget sends to remote A2A peers: sessions_send with
// timeoutSeconds 0 to "a2a:<peer>" stores an outbox item and returns
// accepted with the item's id; the outbox dispatcher sends it (retried
// with backoff on transport errors, dead on a refusal), then follows the
// remote task to its end and records the late reply in the item. A send
// that timed out stores an item for its still-working task, followed the
// same way. Either way the late reply (or the reason the task failed) is
// then posted once into the sender's session, as an inter-session message
// from "a2a:<peer>".
const (
	a2aSendKind = "a2a_send"
	// a2aFollowWait is how long one attempt follows a remote task; a task
	// still working then is followed again at the next attempt.
	a2aFollowWait = 5 * time.Minute
	// a2aSendExpiry makes an item dead when it has failed for that long.
	a2aSendExpiry = 24 * time.Hour
	// a2aSendRetention keeps delivered items (and their replies) that long.
	a2aSendRetention = 7 * 24 * time.Hour
)

// OutboxStore is what remote sends need of the store.
type OutboxStore interface {
	PutOutbox(ctx context.Context, item *store.OutboxItem) error
	UpdateOutbox(ctx context.Context, id string, fn func(*store.OutboxItem) error) (*store.OutboxItem, error)
	GetSession(ctx context.Context, key string) (*store.Session, error)
}

// Poster posts a late reply into the sender's session (agent.Runner).
type Poster interface {
	Post(ctx context.Context, p agent.Post) (string, error)
}

// a2aSendItem is an a2a_send item's payload.
type a2aSendItem struct {
	Peer      string `json:"peer"`
	SourceKey string `json:"sourceKey,omitempty"`
	Text      string `json:"text"`
	MessageID string `json:"messageId"`
	ChainID   string `json:"chainId,omitempty"`
	ChainHops int    `json:"chainHops,omitempty"`
	// RunID is the runId sessions_send returned: the item id of a
	// fire-and-forget send, the remote task id of one that timed out.
	RunID string `json:"runId,omitempty"`
	// Set as the send goes on: the remote task, its last state, and its
	// reply (or the reason it failed) once final.
	TaskID string `json:"taskId,omitempty"`
	State  string `json:"state,omitempty"`
	Reply  string `json:"reply,omitempty"`
	Error  string `json:"error,omitempty"`
	// Posted: the final outcome is in the sender's session.
	Posted bool `json:"posted,omitempty"`
}

// enqueue stores m as an a2a_send item and returns it accepted.
func (r *Sender) enqueue(ctx context.Context, m sessions.RemoteMessage) (sessions.RemoteResult, error) {
	id := newSendItemID()
	if err := r.put(ctx, id, a2aSendItem{Peer: m.Peer, SourceKey: m.SourceKey, Text: m.Text, MessageID: uuid.NewString(),
		ChainID: m.Chain.ID, ChainHops: m.Chain.Hops, RunID: id}); err != nil {
		return sessions.RemoteResult{}, fmt.Errorf("a2a peer %q: queue the send: %w", m.Peer, err)
	}
	return sessions.RemoteResult{TaskID: id}, nil
}

func newSendItemID() string { return "a2a-send:" + uuid.NewString() }

// put stores p as a2a_send item id and wakes the dispatcher.
func (r *Sender) put(ctx context.Context, id string, p a2aSendItem) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := r.st.PutOutbox(ctx, &store.OutboxItem{ID: id, Kind: a2aSendKind, SessionKey: p.SourceKey, Payload: b,
		Status: store.OutboxPending}); err != nil {
		return err
	}
	r.kick()
	return nil
}

// Handler is the outbox handler of a2a_send items.
func (r *Sender) Handler() outbox.Handler {
	return outbox.Handler{Kind: a2aSendKind, Each: r.deliver, Expiry: a2aSendExpiry, Retention: a2aSendRetention}
}

// deliver sends one item (once: the remote task id is saved), follows its
// task to the end and posts the outcome into the sender's session (once:
// the final state is saved before the post, and the post is idempotent).
func (r *Sender) deliver(ctx context.Context, item *store.OutboxItem) error {
	var p a2aSendItem
	if err := json.Unmarshal(item.Payload, &p); err != nil {
		return outbox.Permanent(fmt.Errorf("a2a_send %s: %w", item.ID, err))
	}
	if p.TaskID == "" || !wire.Terminal(p.State) {
		if err := r.follow(ctx, item.ID, &p); err != nil {
			return err
		}
	}
	if p.Posted {
		return nil
	}
	if err := r.postLate(ctx, item.ID, p); err != nil {
		return err
	}
	p.Posted = true
	return r.save(ctx, item.ID, p)
}

// follow sends p unless its task is known, waits for the task to end and
// saves its outcome in p and in item id.
func (r *Sender) follow(ctx context.Context, id string, p *a2aSendItem) error {
	t := &wire.Task{ID: p.TaskID, Status: wire.TaskStatus{State: p.State}}
	if p.TaskID == "" {
		var meta map[string]any
		if p.ChainID != "" {
			meta = wire.ChainMetadata(p.ChainID, p.ChainHops)
		}
		var err error
		t, err = r.c.Send(ctx, outbound.Request{Peer: p.Peer, SourceKey: p.SourceKey, Text: p.Text, MessageID: p.MessageID, Metadata: meta})
		if err != nil {
			return classify(err)
		}
		p.TaskID, p.State = cmp.Or(t.ID, id), t.Status.State
		if err := r.save(ctx, id, *p); err != nil {
			return err
		}
	}
	if !wire.Terminal(t.Status.State) {
		var err error
		t, err = r.c.Wait(ctx, p.Peer, t, a2aFollowWait)
		if err != nil {
			return classify(err)
		}
		if !wire.Terminal(t.Status.State) {
			return fmt.Errorf("a2a peer %q: task %s still %s", p.Peer, p.TaskID, t.Status.State)
		}
	}
	res := remoteResult(p.Peer, t)
	p.State, p.Reply, p.Error = t.Status.State, res.Reply, res.Error
	if err := r.save(ctx, id, *p); err != nil {
		return err
	}
	r.log.Info("a2a late reply recorded", "item", id, "peer", p.Peer, "task", p.TaskID, "state", p.State, "from", p.SourceKey)
	return nil
}

// postLate posts p's final outcome into its sender's session, as an
// inter-session message from "a2a:<peer>" landing after the session's
// current run, as a local flow's posts do. The item id keys the post, so
// a retry never posts twice. Nothing is posted for a sender without a
// session or one whose send policy denies delivery.
func (r *Sender) postLate(ctx context.Context, id string, p a2aSendItem) error {
	if p.SourceKey == "" || r.poster == nil {
		return nil
	}
	sess, err := r.st.GetSession(ctx, p.SourceKey)
	if errors.Is(err, store.ErrNotFound) {
		r.log.Info("a2a late reply not posted: no sender session", "item", id, "from", p.SourceKey)
		return nil
	}
	if err != nil {
		return err
	}
	if sessions.SendPolicyOf(r.sendRules, sess, p.SourceKey, "") == policy.DecisionDeny {
		r.log.Info("a2a late reply suppressed by send policy", "item", id, "session", p.SourceKey)
		return nil
	}
	_, err = r.poster.Post(ctx, agent.Post{
		SessionKey: p.SourceKey, Text: lateReplyText(p), IdempotencyKey: "a2a-late:" + id, AfterRun: true,
		Provenance: &transcript.Provenance{Kind: transcript.ProvenanceInterSession, SourceSessionKey: sessions.RemotePrefix + p.Peer,
			SourceChannel: sessions.RemoteChannel, SourceTool: sessions.SendToolName, ChainID: p.ChainID, ChainHops: p.ChainHops,
			Untrusted: "a2a"},
	})
	if errors.Is(err, agent.ErrNoSession) {
		r.log.Info("a2a late reply not posted: no sender session", "item", id, "from", p.SourceKey)
		return nil
	}
	return err
}

// lateReplyText is what the sender reads of a remote task that ended after
// its sessions_send returned.
func lateReplyText(p a2aSendItem) string {
	runID := cmp.Or(p.RunID, p.TaskID)
	switch {
	case p.State != wire.StateCompleted:
		return fmt.Sprintf("sessions_send to %s%s (runId %s) ended without a reply: %s", sessions.RemotePrefix, p.Peer, runID,
			cmp.Or(p.Error, strings.ToLower(strings.TrimPrefix(p.State, "TASK_STATE_"))))
	case p.Reply == "":
		return fmt.Sprintf("Reply from %s%s to sessions_send (runId %s): (no reply text)", sessions.RemotePrefix, p.Peer, runID)
	}
	return fmt.Sprintf("Reply from %s%s to sessions_send (runId %s):\n%s", sessions.RemotePrefix, p.Peer, runID, p.Reply)
}

// save writes p back into item id.
func (r *Sender) save(ctx context.Context, id string, p a2aSendItem) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = r.st.UpdateOutbox(context.WithoutCancel(ctx), id, func(it *store.OutboxItem) error {
		it.Payload = b
		return nil
	})
	return err
}

// classify makes a refusal permanent; transport errors are retried.
func classify(err error) error {
	if outbound.Transient(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return outbox.Permanent(err)
}
