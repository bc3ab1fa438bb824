package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
)

// Acknowledgements. A node hears what a peer wants some time after the
// peer started wanting it: a run of the session that ends meanwhile had
// its events other than its end published to no one. So the node sends
// the peer, with its catch-up, the events of the session's runs that ended
// since the peer started wanting it (the announcement's since), and then
// acknowledges the announcement (its number) in its stream of relayed
// events: a notification "<origin> ack\n<peer>\t<number>\n..." on
// ChanEvents, after the catch-up and every event it queued before it.
// Notifications reach every listener in commit order, so what the peer
// reads of the node after the acknowledgement is complete.
//
// The peer, from the moment it starts wanting a session until each node
// that announces (and so acknowledges) acknowledged the announcement,
// holds back that node's relayed events, catch-ups excepted: a run's end
// relayed before the node heard of the want reaches the peer's
// subscribers after the run's last events, which the catch-up brings.
// Held events are handed over when the node acknowledged, left, or is no
// longer live, and after a lease at most: a node that did not
// acknowledge within a lease (one of a version before) is not waited for
// again until it acknowledges, leaves or joins again. Replay uses the same
// numbers: it returns once every such node acknowledged its request.
const ackOp = "ack"

// ackState is what a node knows of the acknowledgements of its own
// announcements.
type ackState struct {
	mu sync.Mutex
	// no is the number of this node's last numbered announcement; added
	// the number of the last one that added keys.
	no, added int64
	// from is what each peer acknowledged; peers are the peers that
	// acknowledge (they announce); silent are the peers that announce but
	// did not acknowledge within a lease (a node of a version before):
	// they are not waited for until they acknowledge, leave or join
	// again.
	from   map[string]int64
	peers  map[string]bool
	silent map[string]bool
	// wake is closed when an acknowledgement comes or a peer goes.
	wake chan struct{}
	// wantGen counts the Wants that added a key; sentGen is wantGen as
	// of the last numbering of announcements: until then a Want is
	// pending for every peer.
	wantGen, sentGen atomic.Int64
}

func newAckState() *ackState {
	return &ackState{from: make(map[string]int64), peers: make(map[string]bool), silent: make(map[string]bool), wake: make(chan struct{})}
}

// pending reports whether a want of this node may not have been heard by
// peer origin yet: its events are held back.
func (a *ackState) pending(origin string) bool {
	if a.wantGen.Load() > a.sentGen.Load() {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.peers[origin] && a.from[origin] < a.added
}

// known records that peer id announces, and so acknowledges (unless it
// is silent).
func (a *ackState) known(id string) {
	a.mu.Lock()
	if !a.silent[id] {
		a.peers[id] = true
	}
	a.mu.Unlock()
}

// silence stops waiting for peer id's acknowledgements: it announces but
// did not acknowledge within a lease.
func (a *ackState) silence(id string) {
	a.mu.Lock()
	a.silent[id] = true
	delete(a.peers, id)
	a.wakeLocked()
	a.mu.Unlock()
}

// ack records that peer id acknowledged this node's announcements up to
// no.
func (a *ackState) ack(id string, no int64) {
	a.mu.Lock()
	delete(a.silent, id)
	a.peers[id] = true
	a.from[id] = max(a.from[id], no)
	a.wakeLocked()
	a.mu.Unlock()
}

// gone forgets peer id (it left, or is a new incarnation).
func (a *ackState) gone(id string) {
	a.mu.Lock()
	delete(a.peers, id)
	delete(a.from, id)
	delete(a.silent, id)
	a.wakeLocked()
	a.mu.Unlock()
}

// prune forgets the peers not in live.
func (a *ackState) prune(live map[string]bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id := range a.peers {
		if !live[id] {
			delete(a.peers, id)
			delete(a.from, id)
		}
	}
	for id := range a.silent {
		if !live[id] {
			delete(a.silent, id)
		}
	}
	a.wakeLocked()
}

func (a *ackState) wakeLocked() {
	close(a.wake)
	a.wake = make(chan struct{})
}

// await returns once every peer that acknowledges acknowledged no, or
// with an error when ctx ends first.
func (a *ackState) await(ctx context.Context, no int64) error {
	for {
		a.mu.Lock()
		var missing []string
		for id := range a.peers {
			if a.from[id] < no {
				missing = append(missing, id)
			}
		}
		wake := a.wake
		a.mu.Unlock()
		if len(missing) == 0 {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return fmt.Errorf("not acknowledged by %s: %w", strings.Join(missing, ", "), ctx.Err())
		}
	}
}

// replayReq is a Replay waiting for its announcement's number (0: it was
// not sent).
type replayReq struct {
	runID string
	no    int64
	done  chan int64
}

// Replay implements agent.RemoteReplayer: the peers send the events of
// runID they logged as its executor again (as catch-ups), and it returns
// once every peer that acknowledges acknowledged the request, a lease at
// most.
func (n *Node) Replay(ctx context.Context, runID string) error {
	req := replayReq{runID: runID, done: make(chan int64, 1)}
	n.wantMu.Lock()
	n.replays = append(n.replays, req)
	n.wantMu.Unlock()
	n.kickAnnounce()
	ctx, cancel := context.WithTimeout(ctx, n.lease)
	defer cancel()
	var no int64
	select {
	case no = <-req.done:
	case <-ctx.Done():
		return fmt.Errorf("cluster.Replay %s: %w", runID, ctx.Err())
	}
	if no == 0 {
		return fmt.Errorf("cluster.Replay %s: %w", runID, errors.New("request not sent"))
	}
	if err := n.acked.await(ctx, no); err != nil {
		return fmt.Errorf("cluster.Replay %s: %w", runID, err)
	}
	return nil
}

// ackLocked queues the acknowledgement of peer id's announcement no;
// relayMu is held.
func (n *Node) ackLocked(id string, no int64) {
	if no <= 0 {
		return
	}
	n.acks[id] = max(n.acks[id], no)
	select {
	case n.relayCh <- struct{}{}:
	default:
	}
}

// requeue puts back the catch-ups and acknowledgements of a batch whose
// publication failed, before what was queued since.
func (n *Node) requeue(catchUp []agent.Event, acks map[string]int64) {
	n.relayMu.Lock()
	defer n.relayMu.Unlock()
	n.catchUp = append(catchUp, n.catchUp...)
	for id, no := range acks {
		n.acks[id] = max(n.acks[id], no)
	}
}

// kickRequeued has the publisher try again the catch-ups and
// acknowledgements a failed publication put back (the sweeper calls it;
// no new event may come to carry them).
func (n *Node) kickRequeued() {
	n.relayMu.Lock()
	waiting := len(n.catchUp) > 0 || len(n.acks) > 0
	n.relayMu.Unlock()
	if waiting {
		select {
		case n.relayCh <- struct{}{}:
		default:
		}
	}
}

// ackPayload is the notification acknowledging acks (peer → number), with
// prefix (the origin and a space) before; "" for none.
func ackPayload(prefix string, acks map[string]int64) string {
	if len(acks) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(prefix + ackOp)
	for id, no := range acks {
		b.WriteString("\n" + id + "\t" + strconv.FormatInt(no, 10))
	}
	return b.String()
}

// ackedBy handles origin's acknowledgements (on the reader's goroutine,
// after the events origin relayed before them).
func (n *Node) ackedBy(origin, acks string) {
	for line := range strings.SplitSeq(acks, "\n") {
		id, no, ok := strings.Cut(line, "\t")
		if !ok || id != n.cfg.ID {
			continue
		}
		if v, err := strconv.ParseInt(no, 10, 64); err == nil {
			n.acked.ack(origin, v)
		}
	}
	n.releaseHeld()
}

// peerGone forgets what peer id acknowledged, and hands over what was held
// of it.
func (n *Node) peerGone(id string) {
	n.acked.gone(id)
	n.kickRelease()
}

func (n *Node) kickRelease() {
	select {
	case n.releaseCh <- struct{}{}:
	default:
	}
}

// heldEvents are a peer's relayed events held back, in the order they
// came.
type heldEvents struct {
	evs []heldEvent
}

// heldEvent is one event held back: it is handed over once its peer
// acknowledged need, the number of this node's last announcement adding
// keys when it came (-1 while that want was not numbered yet: the
// announcement made once wantGen reached gen), or a lease after at (when).
type heldEvent struct {
	e    relayed
	need int64
	gen  int64
	at   time.Time
}

// owed is what a peer must acknowledge before an event of it that comes
// now is handed over: the number of the last announcement adding keys,
// or -1 and the want generation to wait for while the last wants are not
// numbered yet.
func (a *ackState) owed() (need, gen int64) {
	gen = a.wantGen.Load()
	if gen > a.sentGen.Load() {
		return -1, gen
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.added, gen
}

// numbered returns the number an event held for want generation gen
// waits for, once the wants up to gen were numbered (the last number
// adding keys then, or a later one); -1 until then.
func (a *ackState) numbered(gen int64) int64 {
	if a.sentGen.Load() < gen {
		return -1
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.added
}

// acknowledged reports whether peer origin acknowledged need, or is not
// waited for.
func (a *ackState) acknowledged(origin string, need int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.peers[origin] || a.from[origin] >= need
}

// holding reports whether origin's relayed events are held back (on the
// reader's goroutine): a want of this node's is not acknowledged by it,
// or some are held already.
func (n *Node) holding(origin string) bool {
	return n.held[origin] != nil || n.acked.pending(origin)
}

// maxHeld bounds the relayed events held back for one peer. A peer that
// acknowledges nothing while it relays this many is treated as one that
// did not acknowledge within a lease: its events are handed over and no
// longer held. (The lease alone bounded them in time only, so a busy
// peer's could fill memory for a lease.)
const maxHeld = 16384

// hold holds back e, an event origin relayed, until origin acknowledged
// need (owed). It reports whether origin's held events reached maxHeld.
func (n *Node) hold(origin string, e relayed, need, gen int64) bool {
	h := n.held[origin]
	if h == nil {
		h = &heldEvents{}
		n.held[origin] = h
	}
	h.evs = append(h.evs, heldEvent{e: e, need: need, gen: gen, at: time.Now()})
	return len(h.evs) >= maxHeld
}

// releaseHeld hands the runner, in order, the held events whose peers
// acknowledged what they wait for, and all of a peer's once its first
// was held for a lease or maxHeld are held (on the reader's goroutine).
// An event is held for the wants made before it came, not for those made
// since: while wants come faster than a peer acknowledges them, its
// events are still handed over a round trip after they came.
func (n *Node) releaseHeld() {
	for origin, h := range n.held {
		for i := range h.evs {
			if h.evs[i].need < 0 {
				h.evs[i].need = n.acked.numbered(h.evs[i].gen)
			}
		}
		ready := 0
		for ready < len(h.evs) && h.evs[ready].need >= 0 && n.acked.acknowledged(origin, h.evs[ready].need) {
			ready++
		}
		if ready < len(h.evs) && (time.Since(h.evs[ready].at) >= n.lease || len(h.evs) >= maxHeld) {
			if n.acked.pending(origin) {
				n.log.Warn("a peer did not acknowledge a want within a lease or "+strconv.Itoa(maxHeld)+" events: its relayed events are no longer held for its acknowledgements", "origin", origin, "events", len(h.evs))
				n.acked.silence(origin)
			}
			ready = len(h.evs)
		}
		if ready == 0 {
			continue
		}
		release := h.evs[:ready]
		if ready == len(h.evs) {
			delete(n.held, origin)
		} else {
			h.evs = slices.Clone(h.evs[ready:])
		}
		var wanted map[string]bool
		for _, he := range release {
			if err := n.relayOne(he.e, &wanted); err != nil {
				n.log.Warn("relayed event undecodable", "origin", origin, "runId", he.e.runID, "err", err)
			}
		}
	}
}
