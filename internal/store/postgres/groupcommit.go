package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchboardhq/switchboard/internal/store"
)

// A run's end is a transaction of one batch (fence check, the end, its
// messages: endTx), and each costs the database a transaction of its own:
// its start, its commit record and flush, a backend's wake-up and a round
// trip. groupCommitter sends the ends that arrive while one is in flight
// together, as one batch: one implicit transaction (the statements before
// pgx's Sync) holding each member's statements in turn, each member's
// fence check first among its own, as it is when the member goes alone.
// The group commits when every statement succeeded; when one fails (a
// fenced member, a run that is no longer live, a transcript whose tail
// moved) the server skips the rest and rolls the whole group back at the
// Sync, and then each member commits alone, as it would have without the
// group: one bad member never fails another, and a fenced member is refused
// in its own fence check's statement, as before.
//
// The members go in the order of their lanes' keys (byte order), those
// without a fence last, in the order they came: a member's fence check
// share-locks its lane, and the group holds each lane until it commits,
// so it takes them in the order the transactions that lock several lanes
// do (AdoptDead, LeaveNode, ReleaseLanes, ClaimOrphans), and neither
// waits for the other in a cycle. Members of one lane keep their order.
//
// A flight holds up the members that come meanwhile for stallAfter at
// most, counted from the first of them (a timer only then: an idle
// committer's transactions arm none): a flight waiting on a lock (a lane
// row another node holds while it is paused, a transcript lock) then
// hands its place to them, and they go as the next group beside it, so
// one stuck session does not stall every run's open and end on the node.
type groupCommitter struct {
	mu      sync.Mutex
	busy    bool           // a transaction (alone or a group) is in flight
	flight  uint64         // numbers the flights; the current one's while busy
	waiting []*groupMember // arrived while busy: the next group
	stall   *time.Timer    // armed by the first of waiting: hands the flight over

	// stallAfter is how long a flight holds up the next group, in
	// nanoseconds (0: defaultStallAfter).
	stallAfter atomic.Int64
	stalled    atomic.Int64 // flights that outlasted stallAfter

	// joined, when set (tests), is called with a member that joined the
	// next group and the number of members waiting then.
	joined func(m *groupMember, n int)

	groups atomic.Int64 // groups of two or more members committed
	failed atomic.Int64 // groups rolled back, their members then sent alone
}

// groupMember is one transaction offered to a groupCommitter.
type groupMember struct {
	ctx context.Context
	// lane is the key of the lane whose fence the member checks, "" when
	// none: the group goes in their order (see groupCommitter).
	lane string
	// stmts are the transaction's statements, its fence check first; read
	// reads their results from a group's batch (and must change nothing
	// but the member's own results: the group may still roll back).
	stmts []*pgx.QueuedQuery
	read  func(br pgx.BatchResults) error
	// alone sends the transaction on its own: when nothing is in flight,
	// and when its group failed in the database.
	alone func(ctx context.Context) error
	wake  chan groupTurn // buffered: one turn
}

// defaultStallAfter is how long a flight holds up the next group: far
// above a transaction's few milliseconds, even on a loaded machine, far
// below a lease.
const defaultStallAfter = 50 * time.Millisecond

// newGroupMember is a member of ctx's transaction stmts, in the lane
// of ctx's fence (none: no lane).
func newGroupMember(ctx context.Context, stmts []*pgx.QueuedQuery) *groupMember {
	m := &groupMember{ctx: ctx, stmts: stmts}
	if f, ok := store.FenceOf(ctx); ok {
		m.lane = f.SessionKey
	}
	return m
}

// groupTurn is what a waiting member is woken with.
type groupTurn struct {
	lead   []*groupMember // non-nil: send these (this member first) as a group
	flight uint64         // with lead: the flight it is
	retry  bool           // the group was rolled back: commit alone
	err    error          // otherwise the group's outcome
}

// commit runs m's transaction: alone on the caller when nothing is in
// flight, else in the group that is sent once the flight ends. It returns
// m's outcome.
func (g *groupCommitter) commit(s *Store, m *groupMember) error {
	g.mu.Lock()
	if !g.busy {
		g.busy = true
		g.flight++
		id := g.flight
		g.mu.Unlock()
		err := m.alone(m.ctx)
		g.next(id)
		return err
	}
	m.wake = make(chan groupTurn, 1)
	g.waiting = append(g.waiting, m)
	if len(g.waiting) == 1 {
		id := g.flight
		g.stall = time.AfterFunc(cmp.Or(time.Duration(g.stallAfter.Load()), defaultStallAfter), func() {
			g.stalled.Add(1)
			g.next(id)
		})
	}
	n, joined := len(g.waiting), g.joined
	g.mu.Unlock()
	if joined != nil {
		joined(m, n)
	}
	var t groupTurn
	select {
	case t = <-m.wake:
	case <-m.ctx.Done():
		g.mu.Lock()
		if i := slices.Index(g.waiting, m); i >= 0 {
			g.waiting = slices.Delete(g.waiting, i, i+1)
			g.mu.Unlock()
			return m.ctx.Err() // not sent: nothing written
		}
		g.mu.Unlock()
		t = <-m.wake // taken into a group already: its outcome comes
	}
	switch {
	case t.lead != nil:
		err := g.send(s, t.lead)
		g.next(t.flight)
		return err
	case t.retry:
		return m.alone(m.ctx)
	default:
		return t.err
	}
}

// next ends flight id, or stops it holding up the rest (its stall timer
// fired): the members that waited meanwhile go as the next flight, sent by
// the first of them; with none, the committer is free. A flight already
// ended or handed over changes nothing.
func (g *groupCommitter) next(id uint64) {
	g.mu.Lock()
	if !g.busy || g.flight != id {
		g.mu.Unlock()
		return
	}
	ms := g.waiting
	g.waiting = nil
	if g.stall != nil {
		g.stall.Stop()
		g.stall = nil
	}
	if len(ms) == 0 {
		g.busy = false
		g.mu.Unlock()
		return
	}
	g.flight++
	next := g.flight
	g.mu.Unlock()
	ms[0].wake <- groupTurn{lead: ms, flight: next}
}

// send sends ms (the caller's member first) as one batch, wakes the
// others with their outcome and returns the first's. The batch's context
// ends when every member's has: a member whose caller gave up does not
// fail the others.
func (g *groupCommitter) send(s *Store, ms []*groupMember) error {
	lead := ms[0]
	if len(ms) == 1 {
		return lead.alone(lead.ctx)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(lead.ctx))
	defer cancel()
	live := atomic.Int32{}
	live.Store(int32(len(ms)))
	for _, m := range ms {
		stop := context.AfterFunc(m.ctx, func() {
			if live.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	err := g.sendBatch(ctx, s, ms)
	var turn groupTurn
	switch _, inDB := errors.AsType[*pgconn.PgError](err); {
	case err == nil:
		g.groups.Add(1)
	case inDB || errors.Is(err, errGroupNotSent):
		// Rolled back at the Sync (or never sent): each alone.
		g.failed.Add(1)
		turn.retry = true
	default:
		// The connection failed: the outcome is unknown to every member,
		// as it would be to a transaction of its own.
		turn.err = fmt.Errorf("group of %d transactions: %w", len(ms), err)
	}
	for _, m := range ms[1:] {
		m.wake <- turn
	}
	if turn.retry {
		return lead.alone(lead.ctx)
	}
	return turn.err
}

// errGroupNotSent wraps a failure before anything of a group was sent.
var errGroupNotSent = errors.New("group not sent")

// sendBatch sends the members' statements as one batch: one implicit
// transaction, committed at its Sync only when every statement succeeded.
func (g *groupCommitter) sendBatch(ctx context.Context, s *Store, ms []*groupMember) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", errGroupNotSent, err)
	}
	defer conn.Release()
	ms = slices.Clone(ms)
	slices.SortStableFunc(ms, byLane)
	var b pgx.Batch
	for _, m := range ms {
		b.QueuedQueries = append(b.QueuedQueries, m.stmts...)
	}
	br := conn.Conn().SendBatch(ctx, &b)
	for _, m := range ms {
		if err := m.read(br); err != nil {
			br.Close()
			return err
		}
	}
	return br.Close()
}

// byLane orders a group's members by their lanes' keys, in byte order
// (as lanesInOrder and ClaimOrphans lock lanes), those without a lane
// last.
func byLane(a, b *groupMember) int {
	switch {
	case a.lane == b.lane:
		return 0
	case a.lane == "":
		return 1
	case b.lane == "":
		return -1
	}
	return strings.Compare(a.lane, b.lane)
}
