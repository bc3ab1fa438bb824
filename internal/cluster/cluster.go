// Package cluster makes a gateway one node of several that share a
// PostgreSQL database and act as one gateway. It owns the node's lease (a
// heartbeat renews it; a node that cannot renew stops executing before the
// lease ends), the session lanes (a lane runs on the one node that claimed
// it), the adoption of dead nodes' work (their running runs aborted as a
// restart aborts them, their queued runs claimed with SKIP LOCKED), and the
// relay of run events and wake-ups between nodes over LISTEN/NOTIFY, whose
// payloads are ids (the data is read from tables) or relayed run events
// themselves (a batch cut into notifications that fit; frame.go).
//
// The runner (package agent) consumes it as its agent.Lanes; the daemon
// starts it in place of the runner's single-node Recover.
package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/postgres"
)

// Store is what a node needs of the database (implemented by
// *postgres.Store).
type Store interface {
	SetNode(id string)
	RegisterNode(ctx context.Context, n postgres.NodeInfo, lease time.Duration) error
	RenewNode(ctx context.Context, id string, lease time.Duration, load postgres.NodeLoad) (peers int, err error)
	SetNodeState(ctx context.Context, id, state string) error
	LeaveNode(ctx context.Context, id string) error
	ListNodes(ctx context.Context) ([]postgres.NodeInfo, error)
	ClaimLane(ctx context.Context, node, sessionKey string) (owner string, epoch int64, err error)
	OfferLane(ctx context.Context, node, sessionKey string) (owner string, err error)
	ReleaseLanes(ctx context.Context, node string, keys []string) ([]string, error)
	AdoptDead(ctx context.Context, errText string, also ...string) (postgres.Adoption, error)
	ClaimOrphans(ctx context.Context, node string, limit int) ([]string, error)
	RunningOn(ctx context.Context, node string) ([]*store.Run, error)
	Notify(ctx context.Context, channel, payload string) error
	NotifyAll(ctx context.Context, channel string, payloads []string) error
	Listen(ctx context.Context, channels []string, ready func(), fn func(channel, payload string)) error
	PublishEvents(ctx context.Context, origin string, body []byte) (int64, error)
	ReadEvents(ctx context.Context, id int64) ([]byte, error)
	PruneEvents(ctx context.Context, age time.Duration) (int64, error)
}

var _ Store = (*postgres.Store)(nil)

// Runner is what a node needs of the local runner (*agent.Runner).
type Runner interface {
	Pull(ctx context.Context, sessionKey string) (int, error)
	Relay(ev agent.Event)
	Ended(runs []*store.Run)
	WakeAll()
	AbortLocal(runID string) bool
	Fence()
	Load() (active, queued, lanes int)
	// SubscribeLocal: the relay needs the events of the runs executing
	// here, and nothing relayed here from other nodes.
	SubscribeLocal(fn func(agent.Event)) (unsubscribe func())
	// WantsRelayed and RelayLogged: of a run executing elsewhere, the
	// reader decodes and relays only the events a subscriber here wants
	// (and every end and post); the others are logged undecoded.
	WantsRelayed(sessionKey, runID string) bool
	RelayLogged(runID, sessionKey string, seq int64, decode func() (agent.Event, error))
	// Executing: the events of a session's runs executing here so far
	// (and of those that ended since a time), for a peer that starts
	// wanting them mid-run; RunEvents: a run's, for a peer that asks
	// for them again (wants.go).
	Executing(sessionKey string, endedSince time.Time) []agent.Event
	RunEvents(runID string) []agent.Event
	FinishOrphans(ctx context.Context, running []*store.Run) ([]*store.Run, error)
	RecoverEnds(ctx context.Context, all bool)
}

var _ Runner = (*agent.Runner)(nil)

// Defaults.
const (
	// DefaultLease is how long a node's lease lasts without a heartbeat.
	DefaultLease = 10 * time.Second
	// sweepEvery is how often a node looks for dead nodes and orphaned
	// queued runs: adoption follows a lease's end within it.
	sweepEvery = time.Second
	// eventRetention is how long relayed events stay in the table.
	eventRetention = time.Minute
	// maxRelayBacklog bounds events waiting to be relayed; beyond it
	// streaming deltas are dropped (a run's start, end, tool and post
	// events never are).
	maxRelayBacklog = 20000
	// orphanBatch bounds the lanes one sweep claims.
	orphanBatch = 200
	// laneIdle is how long a node keeps an idle session's lane before it
	// gives it up.
	laneIdle = 2 * time.Second
	// orphanEvery is how often a node looks for runs the store has
	// running on it that it does not run (their final write was lost).
	orphanEvery = 10 * time.Second
)

// Config configures a Node.
type Config struct {
	Store Store
	// ID is the node's id, unique among the nodes of the database; a
	// node restarted with the same id adopts its previous incarnation's
	// work at once, without waiting for its lease to end.
	ID      string
	Address string
	Version string
	// Lease is the lease length; 0 means DefaultLease.
	Lease time.Duration
	// OnAdopt, when set, is called with the runs of dead nodes that an
	// adoption aborted (after their end was announced to the runner's
	// subscribers), e.g. to write sub-agent announces for them.
	OnAdopt func(ctx context.Context, aborted []*store.Run)
	// OnJoin, when set, is called (on a goroutine of the node's, one call
	// at a time) with the id of each node that joins after this one
	// started, e.g. to check that it shares the agents' workspaces.
	OnJoin func(ctx context.Context, id string)
	// Spread, when set, says which sessions a busy node hands to a less
	// loaded one when their lane is first claimed (e.g. the children a
	// sessions_spawn burst creates); see Node.Claim.
	Spread func(sessionKey string) bool
	Logger *slog.Logger
}

// Node is this gateway as one node of the cluster. It implements
// agent.Lanes. Create with New, Start once the runner exists, Leave on a
// graceful stop, Close last.
type Node struct {
	cfg   Config
	st    Store
	log   *slog.Logger
	lease time.Duration

	runner Runner
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	unsub  func()

	peers   atomic.Int32 // live nodes other than this one, as last seen
	leaving atomic.Bool
	sweepCh chan struct{}
	// relayLost is set when relayed events may have been lost (the
	// listener reconnected, or the reader's backlog overflowed): the next
	// sweep looks for the ends of every run not seen to end.
	relayLost atomic.Bool

	// validUntil is when this node must stop executing unless a renewal
	// succeeds (unix nanoseconds on the local clock).
	validUntil atomic.Int64
	fenced     atomic.Bool

	relayMu  sync.Mutex
	relayBuf []agent.Event
	relayCh  chan struct{}
	dropped  atomic.Int64

	// What the peers want relayed (wants.go): peerWants is each peer's
	// announced set of session keys (nil: not known, it gets everything),
	// guarded by relayMu; scope is what they add up to.
	peerWants map[string]map[string]bool
	scope     atomic.Pointer[relayScope]
	// catchUp are the events queued for peers that started wanting their
	// sessions mid-run, guarded by relayMu; they go out before relayBuf.
	catchUp []agent.Event
	// What this node wants: wantRefs counts the holders of each key
	// (Want), guarded by wantMu; the announcer sends the changes, and its
	// whole set when a peer said hello (helloAsked), after its own hello
	// when its listener (re)connected (helloSend).
	wantMu     sync.Mutex
	wantRefs   map[string]int
	wantSince  map[string]time.Time // since when each key of wantRefs is held
	announceCh chan struct{}
	helloAsked atomic.Bool
	helloSend  atomic.Bool
	// replays are the runs whose events Replay asks the peers for,
	// guarded by wantMu; the announcer sends them.
	replays []replayReq

	// Acknowledgements (acks.go): acks are the numbers of the peers'
	// announcements handled here, to acknowledge (relayMu); acked is
	// what the peers acknowledged of this node's announcements (with a
	// lock of its own); held are the relayed events kept back until then
	// (the reader's own).
	acks  map[string]int64
	acked *ackState
	held  map[string]*heldEvents
	// releaseCh asks the reader to hand over the held events no longer
	// waiting for an acknowledgement.
	releaseCh chan struct{}

	pullCh  chan string
	eventCh chan batchNote
	joinCh  chan string

	// laneMu guards lanes, the lanes this node holds in the store: a lane
	// stays held while its session is idle for a while (a warm session's
	// next turn claims nothing), and is released when idle for laneIdle.
	// A release holds laneMu across the store call, so a claim never
	// races the release of the same lane.
	laneMu sync.Mutex
	lanes  map[string]time.Time // idle since; zero while running
	// pulled are the lanes handed to this node (by another node's
	// spread, or found claimed for it by a sweep) whose claim has not
	// been made yet: they are never spread on again.
	pulled map[string]bool

	// loadMu guards peerLoad, the lanes of each live active peer as
	// estimated for spreading: as of the peers' last heartbeats (read at
	// this node's), plus the lanes offered to them since; and offered,
	// when this node offered each peer a lane in the last lease (a peer's
	// heartbeat may not count those yet).
	loadMu   sync.Mutex
	peerLoad map[string]int
	offered  map[string][]time.Time

	// epochMu guards epochs, the claim epoch of each lane in lanes. It is
	// never held across a store call, so the claim checks a run makes
	// before each provider request and tool call never wait for the
	// database.
	epochMu sync.RWMutex
	epochs  map[string]int64
}

var _ agent.Lanes = (*Node)(nil)

// New returns a node; it does nothing until Start.
func New(cfg Config) (*Node, error) {
	if cfg.Store == nil {
		return nil, errors.New("cluster.New: Store is required")
	}
	if cfg.ID == "" {
		return nil, errors.New("cluster.New: ID is required")
	}
	n := &Node{
		cfg:     cfg,
		st:      cfg.Store,
		log:     cfg.Logger,
		lease:   cfg.Lease,
		sweepCh: make(chan struct{}, 1),
		relayCh: make(chan struct{}, 1),
		pullCh:  make(chan string, 1024),
		eventCh: make(chan batchNote, 1024),
		joinCh:  make(chan string, 64),
		lanes:   make(map[string]time.Time),
		epochs:  make(map[string]int64),
		pulled:  make(map[string]bool),

		peerWants:  make(map[string]map[string]bool),
		wantRefs:   make(map[string]int),
		wantSince:  make(map[string]time.Time),
		announceCh: make(chan struct{}, 1),
		releaseCh:  make(chan struct{}, 1),
		acks:       make(map[string]int64),
		held:       make(map[string]*heldEvents),
		acked:      newAckState(),
	}
	if n.lease <= 0 {
		n.lease = DefaultLease
	}
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	n.log = n.log.With("component", "cluster", "node", cfg.ID)
	n.ctx, n.cancel = context.WithCancel(context.Background())
	cfg.Store.SetNode(cfg.ID)
	return n, nil
}

// ID is the node's id.
func (n *Node) ID() string { return n.cfg.ID }

// Lease is the node's lease length.
func (n *Node) Lease() time.Duration { return n.lease }

// Start joins the cluster: it adopts the work of this node's previous
// incarnation and of dead nodes, registers the node, starts listening to
// the others, and claims the queued runs no live node holds. runner must
// have been built with this node as its Lanes.
func (n *Node) Start(ctx context.Context, runner Runner) error {
	n.runner = runner
	// A previous incarnation with this id is dead: this process holds its
	// id (and address). Its runs are aborted now, as a restart does.
	if err := n.adopt(ctx, n.cfg.ID); err != nil {
		return fmt.Errorf("cluster.Start: %w", err)
	}
	if err := n.register(ctx); err != nil {
		return fmt.Errorf("cluster.Start: %w", err)
	}
	ready := make(chan struct{})
	n.wg.Go(func() { n.listen(ready) })
	select {
	case <-ready:
	case <-ctx.Done():
		n.Close()
		return fmt.Errorf("cluster.Start: %w", ctx.Err())
	}
	n.unsub = runner.SubscribeLocal(n.onEvent)
	if n.cfg.Spread != nil {
		n.refreshLoads()
	}
	n.wg.Go(n.heartbeat)
	n.wg.Go(n.sweeper)
	n.wg.Go(n.publisher)
	n.wg.Go(n.puller)
	n.wg.Go(n.reader)
	n.wg.Go(n.joiner)
	n.wg.Go(n.announcer)
	n.kickAnnounce()
	if err := n.sweep(ctx); err != nil {
		n.log.Warn("first sweep failed", "err", err)
	}
	return nil
}

// register (re)creates the node's row with a fresh lease and announces it.
func (n *Node) register(ctx context.Context) error {
	start := time.Now()
	if err := n.st.RegisterNode(ctx, postgres.NodeInfo{ID: n.cfg.ID, Address: n.cfg.Address, Version: n.cfg.Version}, n.lease); err != nil {
		return err
	}
	n.renewed(start)
	// Learn the peers now: events are relayed only when there are some.
	if peers, err := n.st.RenewNode(ctx, n.cfg.ID, n.lease, postgres.NodeLoad{}); err == nil {
		n.peers.Store(int32(peers))
	}
	if err := n.st.Notify(ctx, postgres.ChanNodes, "join "+n.cfg.ID); err != nil {
		n.log.Warn("join notify failed", "err", err)
	}
	return nil
}

// renewed records a lease renewal sent at start: the node may execute until
// a fifth of the lease before the lease, counted from then, ends.
func (n *Node) renewed(start time.Time) {
	n.validUntil.Store(start.Add(n.lease - n.lease/5).UnixNano())
	n.fenced.Store(false)
}

// adopt takes over the work of dead nodes (and of the ids in also), and
// tells the runner's subscribers how the aborted runs ended.
func (n *Node) adopt(ctx context.Context, also ...string) error {
	a, err := n.st.AdoptDead(ctx, agent.InterruptedError, also...)
	if err != nil {
		return err
	}
	if len(a.Nodes) == 0 {
		return nil
	}
	if len(a.Aborted) > 0 || a.Lanes > 0 || len(a.Nodes) > 1 || a.Nodes[0] != n.cfg.ID {
		n.log.Warn("adopted the work of dead nodes", "dead", a.Nodes, "abortedRuns", len(a.Aborted), "lanes", a.Lanes)
	}
	for _, r := range a.Aborted {
		n.log.Warn("run interrupted by node loss marked aborted", "runId", r.RunID, "sessionKey", r.SessionKey)
	}
	if len(a.Aborted) > 0 {
		if n.runner != nil {
			n.runner.Ended(a.Aborted)
		}
		if n.cfg.OnAdopt != nil {
			n.cfg.OnAdopt(ctx, a.Aborted)
		}
	}
	return nil
}

// sweep adopts dead nodes' work, then claims the lanes of queued runs no
// live node holds (and re-reads the queues of lanes this node holds, in case
// a hand-over notification was missed).
func (n *Node) sweep(ctx context.Context) error {
	if n.leaving.Load() || n.fenced.Load() {
		return nil
	}
	if err := n.adopt(ctx); err != nil {
		return err
	}
	keys, err := n.st.ClaimOrphans(ctx, n.cfg.ID, orphanBatch)
	if err != nil {
		return err
	}
	for _, key := range keys {
		n.markPulled(key)
		if _, err := n.runner.Pull(ctx, key); err != nil {
			n.log.Warn("pull of claimed lane failed", "sessionKey", key, "err", err)
		}
	}
	return nil
}

// sweeper sweeps every sweepEvery, and at once when asked (a node left).
func (n *Node) sweeper() {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	prune, orphans := time.Now(), time.Now()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		case <-n.sweepCh:
		}
		if err := n.sweep(n.ctx); err != nil && n.ctx.Err() == nil {
			n.log.Warn("sweep failed", "err", err)
		}
		// A run's end whose relay was lost is in the store: watchers and
		// subscribers get it from there.
		n.runner.RecoverEnds(n.ctx, n.relayLost.Swap(false))
		n.kickRelease() // held events past their bound (acks.go)
		n.kickRequeued()
		if !n.fenced.Load() {
			n.releaseIdle(n.ctx)
		}
		if time.Since(orphans) > orphanEvery && n.valid() && !n.leaving.Load() {
			orphans = time.Now()
			n.finishOrphans(n.ctx)
			n.prunePeers(n.ctx)
		}
		if time.Since(prune) > eventRetention/2 {
			prune = time.Now()
			if _, err := n.st.PruneEvents(n.ctx, eventRetention); err != nil && n.ctx.Err() == nil {
				n.log.Warn("event prune failed", "err", err)
			}
		}
	}
}

// finishOrphans finishes the runs the store has running on this node that
// its runner does not run: their node is alive, so no adoption ends them.
func (n *Node) finishOrphans(ctx context.Context) {
	running, err := n.st.RunningOn(ctx, n.cfg.ID)
	if err != nil {
		if ctx.Err() == nil {
			n.log.Warn("orphaned run sweep failed", "err", err)
		}
		return
	}
	if _, err := n.runner.FinishOrphans(ctx, running); err != nil && ctx.Err() == nil {
		n.log.Warn("orphaned run sweep failed", "err", err)
	}
}

func (n *Node) kickSweep() {
	select {
	case n.sweepCh <- struct{}{}:
	default:
	}
}

// heartbeat renews the lease every third of it (every tenth after a
// failed renewal), each attempt bounded by a quarter of the lease (its
// statement by a tenth) so that a database that does not answer never
// holds it for seconds, and fences
// the node (stops every run it executes) when the lease is about to end
// unrenewed. A node whose lease ended and whose work was adopted
// re-registers as new.
func (n *Node) heartbeat() {
	t := time.NewTicker(n.lease / 10)
	defer t.Stop()
	last := time.Now()
	failed := false
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		if time.Now().UnixNano() > n.validUntil.Load() && n.fenced.CompareAndSwap(false, true) {
			n.log.Error("node lease about to end unrenewed: stopping its runs", "lease", n.lease)
			n.runner.Fence()
			n.forgetLanes()
		}
		if !failed && time.Since(last) < n.lease/3 {
			continue
		}
		start := time.Now()
		last = start
		active, queued, lanes := n.runner.Load()
		// A quarter of the lease for the attempt: connecting anew after a
		// failure must fit in it on a loaded machine; the statement itself
		// is bounded by a tenth (RenewNode). validUntil counts from start,
		// so a slow renewal never extends what the node may do.
		ctx, cancel := context.WithTimeout(n.ctx, n.lease/4)
		peers, err := n.st.RenewNode(ctx, n.cfg.ID, n.lease, postgres.NodeLoad{ActiveRuns: active, QueuedRuns: queued, Lanes: lanes})
		cancel()
		failed = err != nil
		switch {
		case err == nil:
			if !n.fenced.Load() {
				n.renewed(start)
			}
			n.peers.Store(int32(peers))
			if n.fenced.Load() {
				n.rejoin()
			} else if n.cfg.Spread != nil {
				n.refreshLoads()
			}
		case errors.Is(err, postgres.ErrLeaseLost):
			if n.leaving.Load() {
				continue
			}
			n.log.Error("node lease lost: stopping its runs and joining again")
			if n.fenced.CompareAndSwap(false, true) {
				n.runner.Fence()
			}
			n.forgetLanes()
			n.rejoin()
		default:
			if n.ctx.Err() == nil {
				n.log.Warn("lease renewal failed", "err", err)
			}
		}
	}
}

// rejoin brings a fenced node back: what it ran is adopted (by itself, if
// no other node did already), then it registers with a new lease.
func (n *Node) rejoin() {
	ctx, cancel := context.WithTimeout(n.ctx, n.lease)
	defer cancel()
	if err := n.adopt(ctx, n.cfg.ID); err != nil {
		n.log.Warn("rejoin: adoption failed", "err", err)
		return
	}
	if err := n.register(ctx); err != nil {
		n.log.Warn("rejoin: register failed", "err", err)
		return
	}
	// The peers took the join for a new node's: they forgot what this one
	// wants and acknowledged (wants.go, acks.go). As a starting node's
	// listener does, it says hello: they send their sets again, which it
	// acknowledges, and it sends its whole set.
	n.helloSend.Store(true)
	n.kickAnnounce()
	n.log.Info("node joined again")
	n.kickSweep()
}

// listen keeps a LISTEN connection open, reconnecting after failures; ready
// is closed after the first connection listens.
func (n *Node) listen(ready chan struct{}) {
	var once sync.Once
	backoff := 50 * time.Millisecond
	for n.ctx.Err() == nil {
		err := n.st.Listen(n.ctx, []string{postgres.ChanLane, postgres.ChanAbort, postgres.ChanEvents, postgres.ChanNodes}, func() {
			once.Do(func() { close(ready) })
			backoff = 50 * time.Millisecond
			// Notifications sent while no connection listened are lost:
			// waiters look at their runs again, and the sweep re-reads
			// this node's lanes and the store for the ends of runs whose
			// end was not relayed.
			n.relayLost.Store(true)
			n.runner.WakeAll()
			n.kickSweep()
			// Announcements may have been missed too: every peer gets
			// everything until it has sent its set again.
			n.peerUnknown("", false)
			n.helloSend.Store(true)
			n.kickAnnounce()
		}, n.notified)
		if n.ctx.Err() != nil {
			return
		}
		n.log.Warn("cluster listener lost its connection", "err", err)
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// notified handles one notification on the listener's goroutine: anything
// that reads the database is handed to a worker.
func (n *Node) notified(channel, payload string) {
	switch channel {
	case postgres.ChanLane:
		node, key, ok := strings.Cut(payload, " ")
		if ok && node == n.cfg.ID {
			select {
			case n.pullCh <- key:
			default:
				n.kickSweep() // the sweep re-reads every lane of this node
			}
		}
	case postgres.ChanAbort:
		n.runner.AbortLocal(payload)
	case postgres.ChanEvents:
		origin, rest, ok := strings.Cut(payload, " ")
		if !ok || origin == n.cfg.ID {
			return
		}
		note := batchNote{origin: origin}
		if isFrame(rest) {
			note.body = []byte(rest)
		} else if acks, ok := strings.CutPrefix(rest, ackOp+"\n"); ok {
			note.acks = acks
		} else if id, err := strconv.ParseInt(rest, 10, 64); err == nil {
			note.id = id
		} else {
			return
		}
		select {
		case n.eventCh <- note:
		default:
			n.log.Warn("relayed events dropped: reader backlog full")
			n.relayLost.Store(true)
			n.runner.WakeAll()
			n.kickSweep()
		}
	case postgres.ChanNodes:
		op, rest, _ := strings.Cut(payload, " ")
		line, keys, _ := strings.Cut(rest, "\n")
		id, meta, _ := strings.Cut(line, "\t")
		if id == n.cfg.ID {
			return
		}
		switch op {
		case wantsOp, wantOp, unwantOp, replayOp:
			n.acked.known(id)
			no, since := parseMeta(meta)
			n.peerAnnounced(op, id, no, since, keys)
		case helloOp:
			n.acked.known(id)
			n.helloAsked.Store(true)
			n.kickAnnounce()
		case "join":
			n.peerGone(id) // a new incarnation acknowledged nothing yet
			n.peerUnknown(id, false)
			n.peers.Store(max(n.peers.Load(), 1))
			select {
			case n.joinCh <- id:
			default: // a burst of joins: the ones queued say enough
			}
		case "leave":
			n.peerGone(id)
			n.peerUnknown(id, true)
			n.kickSweep()
			select {
			case n.joinCh <- "": // the loads are read anew
			default:
			}
		}
	}
}

// puller pulls the lanes other nodes handed over.
func (n *Node) puller() {
	for {
		select {
		case <-n.ctx.Done():
			return
		case key := <-n.pullCh:
			if n.leaving.Load() || n.fenced.Load() {
				continue
			}
			n.markPulled(key)
			if _, err := n.runner.Pull(n.ctx, key); err != nil && n.ctx.Err() == nil {
				n.log.Warn("pull failed", "sessionKey", key, "err", err)
			}
		}
	}
}

// joiner handles the nodes that join (and, as "", leave): it reads the
// peers' loads anew (a new node is the idlest, one gone is none) and hands
// a joining node's id to Config.OnJoin.
func (n *Node) joiner() {
	for {
		select {
		case <-n.ctx.Done():
			return
		case id := <-n.joinCh:
			if n.cfg.Spread != nil {
				n.refreshLoads()
			}
			if n.cfg.OnJoin != nil && id != "" {
				n.cfg.OnJoin(n.ctx, id)
			}
		}
	}
}

// batchNote is a relayed batch as notified by node origin: its body,
// when the notification carried it, else its id in the events table; or
// the origin's acknowledgements (acks.go).
type batchNote struct {
	origin string
	id     int64
	body   []byte
	acks   string
}

// maxInlineBatch bounds a notification that carries relayed events
// itself (PostgreSQL's payload limit is 8000 bytes): a batch is cut into
// frames that fit, and an event too large for one is written to the
// events table, and its id notified.
const maxInlineBatch = 7900

// reader reads relayed event batches in notification order and hands
// their events to the runner.
func (n *Node) reader() {
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.releaseCh:
			n.releaseHeld()
		case note := <-n.eventCh:
			if note.acks != "" {
				n.ackedBy(note.origin, note.acks)
				continue
			}
			body := note.body
			if body == nil {
				var err error
				if body, err = n.st.ReadEvents(n.ctx, note.id); err != nil {
					if n.ctx.Err() == nil {
						n.log.Warn("relayed events unreadable", "id", note.id, "err", err)
						n.relayLost.Store(true)
						n.runner.WakeAll()
					}
					continue
				}
			}
			if err := n.relayBatch(note.origin, body); err != nil {
				n.log.Warn("relayed events undecodable", "id", note.id, "err", err)
			}
		}
	}
}

// relayBatch hands the runner the events of a batch from node origin:
// every end and post, and the other events of the runs WantsRelayed names
// (asked once per run in a batch), decoded (Relay); the others undecoded
// (RelayLogged), for watchers only. An event that does not decode is
// skipped; the first such error is returned. While origin has not
// acknowledged what this node started wanting, its events other than
// catch-ups are held back (acks.go).
func (n *Node) relayBatch(origin string, body []byte) error {
	evs, err := decodeFrame(body)
	if err != nil {
		return err
	}
	hold := origin != "" && n.holding(origin)
	var need, gen int64
	if hold {
		need, gen = n.acked.owed()
	}
	var first error
	var wanted map[string]bool
	full := false
	for _, e := range evs {
		if e.kind == kindCatchUp {
			if err := n.caughtUp(e); err != nil {
				first = cmp.Or(first, err)
			}
			continue
		}
		if hold {
			full = n.hold(origin, e, need, gen) || full
			continue
		}
		if err := n.relayOne(e, &wanted); err != nil {
			first = cmp.Or(first, err)
		}
	}
	if full {
		n.releaseHeld()
	}
	return first
}

// relayOne hands the runner one event of a batch (relayBatch); wanted
// remembers what WantsRelayed said of each run of the batch.
func (n *Node) relayOne(e relayed, wanted *map[string]bool) error {
	if !e.always() {
		want, ok := (*wanted)[e.runID]
		if !ok {
			want = n.runner.WantsRelayed(e.sessionKey, e.runID)
			if *wanted == nil {
				*wanted = make(map[string]bool)
			}
			(*wanted)[e.runID] = want
		}
		if !want {
			n.runner.RelayLogged(e.runID, e.sessionKey, e.seq, e.decode)
			return nil
		}
	}
	ev, err := e.decode()
	if err != nil {
		return err
	}
	n.runner.Relay(ev)
	return nil
}

// onEvent queues this node's run events for the other nodes, when there
// are any. It runs on the run's goroutine and never blocks.
func (n *Node) onEvent(ev agent.Event) {
	if n.peers.Load() == 0 {
		return
	}
	n.relayMu.Lock()
	if kindOf(ev) == kindRun && !n.scope.Load().wanted(ev.SessionKey, int(n.peers.Load())) {
		n.relayMu.Unlock()
		return // no peer wants the run's session (wants.go)
	}
	if len(n.relayBuf) >= maxRelayBacklog && ev.Stream == agent.StreamAssistant {
		n.relayMu.Unlock()
		if n.dropped.Add(1) == 1 {
			n.log.Warn("relay backlog full: streaming deltas dropped for other nodes")
		}
		return
	}
	n.relayBuf = append(n.relayBuf, ev)
	n.relayMu.Unlock()
	select {
	case n.relayCh <- struct{}{}:
	default:
	}
}

// publisher writes queued events as one batch per round trip: events that
// arrive while a batch is written go out together in the next.
func (n *Node) publisher() {
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.relayCh:
		}
		n.flushRelay(n.ctx)
	}
}

// flushRelay publishes the events queued for the other nodes as one batch.
func (n *Node) flushRelay(ctx context.Context) {
	n.relayMu.Lock()
	batch, catchUp, acks := n.relayBuf, n.catchUp, n.acks
	n.relayBuf, n.catchUp = nil, nil
	if len(acks) > 0 {
		n.acks = make(map[string]int64)
	} else {
		acks = nil // n.acks stays, and is not read outside relayMu
	}
	n.relayMu.Unlock()
	if len(batch) == 0 && len(catchUp) == 0 && len(acks) == 0 {
		return
	}
	// The batch goes in notifications, cut into frames that fit one: no
	// row to write, none for every other node to read. An event too large
	// for one goes through the events table.
	prefix := n.cfg.ID + " "
	limit := maxInlineBatch - 1 - len(prefix)
	frames, err := encodeFramesAs(catchUp, limit, true)
	if err == nil {
		var more [][]byte
		more, err = encodeFrames(batch, limit)
		frames = append(frames, more...)
	}
	if err != nil {
		n.log.Error("relay encode failed", "err", err)
		return
	}
	// The acknowledgements go last, in the same statement as the last
	// frames when they went inline: a peer reads them after the frames.
	ack := ackPayload(prefix, acks)
	var inline []string
	for i, f := range frames {
		last := i == len(frames)-1
		if len(f) <= limit {
			inline = append(inline, prefix+string(f))
			if last && ack != "" {
				inline, ack = append(inline, ack), ""
			}
		}
		if len(inline) > 0 && (len(f) > limit || last) {
			err = n.st.NotifyAll(ctx, postgres.ChanEvents, inline)
			inline = inline[:0]
		}
		if err == nil && len(f) > limit {
			_, err = n.st.PublishEvents(ctx, n.cfg.ID, f)
		}
		if err != nil {
			break
		}
	}
	if err == nil && ack != "" {
		err = n.st.NotifyAll(ctx, postgres.ChanEvents, []string{ack})
	}
	if err != nil {
		if ctx.Err() == nil {
			n.log.Warn("relay publish failed", "events", len(batch), "err", err)
		}
		// The catch-ups and acknowledgements go again with the next
		// batch (a peer drops what it has).
		n.requeue(catchUp, acks)
	}
}

// Claim implements agent.Lanes. A lane this node still holds from an
// earlier turn is claimed without a round trip.
func (n *Node) Claim(ctx context.Context, sessionKey string) (string, error) {
	if n.fenced.Load() {
		return "", errors.New("node is fenced (lease lost)")
	}
	mine := -1 // this node's lanes, when the session may be spread
	if n.cfg.Spread != nil && n.cfg.Spread(sessionKey) {
		_, _, mine = n.runner.Load()
	}
	n.laneMu.Lock()
	defer n.laneMu.Unlock()
	if _, ok := n.lanes[sessionKey]; ok {
		n.lanes[sessionKey] = time.Time{}
		return "", nil
	}
	pulled := n.pulled[sessionKey]
	delete(n.pulled, sessionKey)
	if pulled {
		mine = -1 // handed to this node: it stays
	}
	if target := n.spreadTarget(mine); target != "" {
		// Offered to the target (unless a live node holds it: a claim
		// under way is never moved), which the runner's Forward tells;
		// should the target die first, its adopter frees the lane and a
		// sweep claims the runs.
		owner, err := n.st.OfferLane(ctx, target, sessionKey)
		if err != nil {
			return "", err
		}
		if owner != "" && owner != n.cfg.ID {
			return owner, nil
		}
		// Not offered (the target's connection is gone), or this node
		// held it already: claimed here below.
	}
	owner, epoch, err := n.st.ClaimLane(ctx, n.cfg.ID, sessionKey)
	if err != nil {
		return "", err
	}
	if owner != n.cfg.ID {
		return owner, nil
	}
	n.lanes[sessionKey] = time.Time{}
	n.epochMu.Lock()
	n.epochs[sessionKey] = epoch
	n.epochMu.Unlock()
	return "", nil
}

// ClaimHeld is Claim of a lane this node holds already (from an earlier
// turn) and may act for, with no round trip: the lane is kept as Claim
// keeps it, and the fence of its claim returned, for a run to open on it
// at once (the store checks the fence in the open's transaction). ok is
// false, and nothing changed, for any other lane: the runner claims it
// as usual.
func (n *Node) ClaimHeld(sessionKey string) (f store.Fence, ok bool) {
	if n.fenced.Load() {
		return store.Fence{}, false
	}
	n.laneMu.Lock()
	defer n.laneMu.Unlock()
	if _, held := n.lanes[sessionKey]; !held {
		return store.Fence{}, false
	}
	f, err := n.Hold(sessionKey)
	if err != nil {
		return store.Fence{}, false
	}
	n.lanes[sessionKey] = time.Time{}
	return f, true
}

// markPulled records that the session's lane was handed to this node: its
// claim must not spread it on.
func (n *Node) markPulled(sessionKey string) {
	n.laneMu.Lock()
	n.pulled[sessionKey] = true
	n.laneMu.Unlock()
}

// spreadTarget returns the live peer a new lane should go to instead of
// this node, which has mine lanes with it (-1: a session Config.Spread does
// not name), "" when it stays: only when the least loaded peer (by its
// estimated lanes) has at least two lanes fewer. The target's
// estimate counts the lane at once, so a burst of claims alternates
// between this node and the idle ones rather than all going to one.
func (n *Node) spreadTarget(mine int) string {
	if mine < 0 || n.peers.Load() == 0 || n.leaving.Load() {
		return ""
	}
	n.loadMu.Lock()
	defer n.loadMu.Unlock()
	target, least := "", 0
	for id, l := range n.peerLoad {
		if target == "" || l < least || (l == least && id < target) {
			target, least = id, l
		}
	}
	if target == "" || least+1 >= mine {
		return ""
	}
	n.peerLoad[target]++
	if n.offered == nil {
		n.offered = make(map[string][]time.Time)
	}
	n.offered[target] = append(n.offered[target], time.Now())
	return target
}

// refreshLoads reads the live active peers' lanes as of their last
// heartbeats, for spreading.
func (n *Node) refreshLoads() {
	rows, err := n.st.ListNodes(n.ctx)
	if err != nil {
		if n.ctx.Err() == nil {
			n.log.Warn("peer loads not read", "err", err)
		}
		return
	}
	loads := make(map[string]int, len(rows))
	for _, r := range rows {
		if r.Alive && r.State == postgres.NodeActive && r.ID != n.cfg.ID {
			loads[r.ID] = r.Lanes
		}
	}
	// A peer's heartbeat (every third of the lease, read at this node's)
	// may not count the lanes offered to it in the last lease yet: they
	// are added (counting some twice errs towards keeping lanes here).
	recent := time.Now().Add(-n.lease)
	n.loadMu.Lock()
	for id, times := range n.offered {
		i := 0
		for i < len(times) && times[i].Before(recent) {
			i++
		}
		if times = times[i:]; len(times) == 0 {
			delete(n.offered, id)
			continue
		}
		n.offered[id] = times
		if _, ok := loads[id]; ok {
			loads[id] += len(times)
		}
	}
	n.peerLoad = loads
	n.loadMu.Unlock()
}

// errNotHeld is why a node may not act for a lane: it does not hold the
// lane's claim (any more), or its lease is about to end unrenewed.
var errNotHeld = errors.New("this node no longer holds the lane's claim")

// valid reports whether the node may still act: it is not fenced, and the
// lease it last renewed has not come within its margin of ending.
func (n *Node) valid() bool {
	return !n.fenced.Load() && time.Now().UnixNano() < n.validUntil.Load()
}

// Valid reports whether the node may still act under its lease (see
// valid): work that other nodes take over once the lease ended (an
// announce batch claimed by this node) is not started while it may not.
func (n *Node) Valid() bool { return n.valid() }

// Hold implements agent.Lanes: the fence of the lane's current claim, for
// a run about to start on it.
func (n *Node) Hold(sessionKey string) (store.Fence, error) {
	n.epochMu.RLock()
	epoch, ok := n.epochs[sessionKey]
	n.epochMu.RUnlock()
	if !ok || !n.valid() {
		return store.Fence{}, fmt.Errorf("lane %s: %w", sessionKey, errNotHeld)
	}
	return store.Fence{Node: n.cfg.ID, SessionKey: sessionKey, Epoch: epoch}, nil
}

// Check implements agent.Lanes: f still holds when the node's lease is
// valid (on the database's clock, with a fifth of the lease as margin, see
// renewed) and the lane's claim is still the one f names. It reads memory
// only, so a run checks before every provider request and tool call.
func (n *Node) Check(f store.Fence) error {
	n.epochMu.RLock()
	epoch, ok := n.epochs[f.SessionKey]
	n.epochMu.RUnlock()
	if !ok || epoch != f.Epoch || !n.valid() {
		return fmt.Errorf("lane %s, epoch %d: %w", f.SessionKey, f.Epoch, errNotHeld)
	}
	return nil
}

// Release implements agent.Lanes. The lane is kept (idle) for laneIdle,
// so that the session's next turn needs no claim; input other nodes take
// for it meanwhile is handed over here.
func (n *Node) Release(ctx context.Context, sessionKey string) (bool, error) {
	n.laneMu.Lock()
	defer n.laneMu.Unlock()
	if _, ok := n.lanes[sessionKey]; ok {
		n.lanes[sessionKey] = time.Now()
	}
	return false, nil
}

// releaseIdle gives up the lanes idle for laneIdle, in one statement; a
// lane whose session has queued runs meanwhile is kept, and the runs
// pulled.
func (n *Node) releaseIdle(ctx context.Context) {
	n.laneMu.Lock()
	var idle []string
	for key, since := range n.lanes {
		if !since.IsZero() && time.Since(since) >= laneIdle {
			idle = append(idle, key)
		}
	}
	if len(idle) == 0 {
		n.laneMu.Unlock()
		return
	}
	released, err := n.st.ReleaseLanes(ctx, n.cfg.ID, idle)
	if err != nil {
		n.laneMu.Unlock()
		if ctx.Err() == nil {
			n.log.Warn("lane release failed", "lanes", len(idle), "err", err)
		}
		return
	}
	n.epochMu.Lock()
	for _, key := range released {
		delete(n.lanes, key)
		delete(n.epochs, key)
	}
	n.epochMu.Unlock()
	n.laneMu.Unlock()
	if len(released) == len(idle) {
		return
	}
	gone := make(map[string]bool, len(released))
	for _, key := range released {
		gone[key] = true
	}
	for _, key := range idle {
		if !gone[key] {
			if _, err := n.runner.Pull(ctx, key); err != nil && ctx.Err() == nil {
				n.log.Warn("pull failed", "sessionKey", key, "err", err)
			}
		}
	}
}

// forgetLanes drops the record of held lanes (the store's were freed by
// an adoption, or are about to be).
func (n *Node) forgetLanes() {
	n.epochMu.Lock()
	clear(n.epochs)
	n.epochMu.Unlock()
	n.laneMu.Lock()
	clear(n.lanes)
	clear(n.pulled)
	n.laneMu.Unlock()
}

// Forward implements agent.Lanes.
func (n *Node) Forward(ctx context.Context, owner, sessionKey string) {
	if err := n.st.Notify(ctx, postgres.ChanLane, owner+" "+sessionKey); err != nil {
		n.log.Warn("lane hand-over notify failed; the owner's sweep finds the runs", "owner", owner, "err", err)
	}
}

// AbortRemote implements agent.Lanes.
func (n *Node) AbortRemote(ctx context.Context, runID string) error {
	return n.st.Notify(ctx, postgres.ChanAbort, runID)
}

// Nodes lists the cluster's nodes.
func (n *Node) Nodes(ctx context.Context) ([]postgres.NodeInfo, error) {
	return n.st.ListNodes(ctx)
}

// Leave begins a graceful leave: the node stops claiming lanes and runs.
// Call it before the runner's shutdown; then Close, which hands the node's
// lanes back (their queued runs to the other nodes).
func (n *Node) Leave(ctx context.Context) {
	if !n.leaving.CompareAndSwap(false, true) {
		return
	}
	if err := n.st.SetNodeState(ctx, n.cfg.ID, postgres.NodeLeaving); err != nil {
		n.log.Warn("leave: state not recorded", "err", err)
	}
}

// Close stops the node's work and, when its runs are done (after the
// runner's shutdown), removes it from the cluster: its lanes are freed
// and the other nodes told. A second call does nothing.
func (n *Node) Close() error {
	if n.ctx.Err() != nil {
		return nil
	}
	n.leaving.Store(true)
	if n.unsub != nil {
		n.unsub()
	}
	// The last events (the ends of runs the shutdown cut) go out first.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n.flushRelay(ctx)
	n.cancel()
	n.wg.Wait()
	if err := n.st.LeaveNode(ctx, n.cfg.ID); err != nil {
		return fmt.Errorf("cluster.Close: %w", err)
	}
	return nil
}
