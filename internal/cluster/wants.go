package cluster

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/store/postgres"
)

// Which run events go to the other nodes. Every run's end and every post
// go to every node. The other events of a run go out only while some peer
// wants its session: each node announces, on ChanNodes, the session keys
// its consumers want (agent.WantAll, "*": every session's), and a node
// publishes a run's other events only when a peer wants its session, or
// when it does not know what some live peer wants (a peer that just joined
// or has not answered yet, or one of a version that does not announce:
// such a peer gets everything, as before).
//
// The announcements (payload "<op> <node id>\t<number> <since>\n<key>\n<key>...",
// numbered 1, 2, ... by each node; since is when the node started wanting
// the keys the notification adds, in unix nanoseconds, or 0):
//   - wantsOp: the node's whole set, replacing what was known of it (the
//     first of several notifications when it does not fit in one; the rest
//     are wantOp);
//   - wantOp, unwantOp: keys added to, or taken from, the set;
//   - replayOp: the keys are run ids whose events the node wants sent
//     again (agent.RemoteReplayer);
//   - helloOp (payload "hello <node id>", not numbered): the node's
//     listener (re)connected and may have missed announcements: every node
//     sends it its whole set again.
//
// A peer that starts wanting a session mid-run is sent the events of the
// session's runs executing here logged so far, and of those that ended
// since it started wanting it (agent.Runner.Executing), queued before any
// later event of those runs; the peer drops what it had already
// (agent.Runner.Relay). Every numbered announcement is acknowledged after
// what it asked for (acks.go).
const (
	wantsOp  = "wants"
	wantOp   = "want"
	unwantOp = "unwant"
	replayOp = "replay"
	helloOp  = "hello"
)

// relayScope is what the peers want, as last announced: every session's
// events (all), the sessions in keys, and known, how many peers announced
// (a live peer beyond them gets everything).
type relayScope struct {
	all   bool
	keys  map[string]bool
	known int
}

// wanted reports whether a run of sessionKey has its non-end events
// published, with peers live peers.
func (sc *relayScope) wanted(sessionKey string, peers int) bool {
	return sc == nil || sc.all || peers > sc.known || sc.keys[sessionKey]
}

// Want implements agent.RemoteWanter: until release is called, the other
// nodes send this one the events of their runs of sessionKey
// (agent.WantAll: of every session).
func (n *Node) Want(sessionKey string) (release func()) {
	n.wantMu.Lock()
	if n.wantRefs[sessionKey]++; n.wantRefs[sessionKey] == 1 {
		n.wantSince[sessionKey] = time.Now()
		// From now on the peers' relayed events are held back until they
		// acknowledged the want (acks.go).
		n.acked.wantGen.Add(1)
	}
	n.wantMu.Unlock()
	n.kickAnnounce()
	done := false
	return func() {
		n.wantMu.Lock()
		if done {
			n.wantMu.Unlock()
			return
		}
		done = true
		if n.wantRefs[sessionKey]--; n.wantRefs[sessionKey] <= 0 {
			delete(n.wantRefs, sessionKey)
			delete(n.wantSince, sessionKey)
		}
		n.wantMu.Unlock()
		n.kickAnnounce()
	}
}

func (n *Node) kickAnnounce() {
	select {
	case n.announceCh <- struct{}{}:
	default:
	}
}

// announcer tells the other nodes what this node wants: its whole set
// first and whenever a node says hello, then each change, and the runs
// whose events Replay asks for. One goroutine numbers and sends them one
// after the other, so they arrive in order.
func (n *Node) announcer() {
	var last map[string]bool // the set as last announced
	whole := true            // the whole set goes next
	var retry <-chan time.Time
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.announceCh:
		case <-retry:
		}
		retry = nil
		var hello []string
		if n.helloSend.Swap(false) {
			hello = append(hello, helloOp+" "+n.cfg.ID)
			whole = true
		}
		if n.helloAsked.Swap(false) {
			whole = true
		}
		n.wantMu.Lock()
		cur := make(map[string]bool, len(n.wantRefs))
		var since time.Time // the earliest want of the keys added
		for k := range n.wantRefs {
			cur[k] = true
			if s := n.wantSince[k]; !last[k] && (since.IsZero() || s.Before(since)) {
				since = s
			}
		}
		gen := n.acked.wantGen.Load()
		replays := n.replays
		n.replays = nil
		n.wantMu.Unlock()
		var added, removed []string
		for k := range cur {
			if !last[k] {
				added = append(added, k)
			}
		}
		for k := range last {
			if !cur[k] {
				removed = append(removed, k)
			}
		}
		slices.Sort(added)
		slices.Sort(removed)
		var adds, others []string // numbered: the ones adding keys, the others
		if whole {
			adds = announcements(wantsOp, n.cfg.ID, slices.Sorted(maps.Keys(cur)))
		} else {
			if len(added) > 0 {
				adds = announcements(wantOp, n.cfg.ID, added)
			}
			if len(removed) > 0 {
				others = announcements(unwantOp, n.cfg.ID, removed)
			}
		}
		for _, r := range replays {
			others = append(others, announcements(replayOp, n.cfg.ID, []string{r.runID})...)
		}
		var sinceNano int64
		if !since.IsZero() {
			sinceNano = since.UnixNano()
		}
		payloads := hello
		n.acked.mu.Lock()
		for _, p := range adds {
			n.acked.no++
			payloads = append(payloads, withMeta(p, n.acked.no, sinceNano))
			if len(added) > 0 {
				n.acked.added = n.acked.no
			}
		}
		for i, p := range others {
			n.acked.no++
			payloads = append(payloads, withMeta(p, n.acked.no, 0))
			if j := i - (len(others) - len(replays)); j >= 0 {
				replays[j].no = n.acked.no
			}
		}
		n.acked.mu.Unlock()
		n.acked.sentGen.Store(gen)
		n.kickRelease()
		if len(payloads) == 0 {
			continue
		}
		if err := n.st.NotifyAll(n.ctx, postgres.ChanNodes, payloads); err != nil {
			if n.ctx.Err() == nil {
				n.log.Warn("wanted sessions not announced; trying again", "err", err)
			}
			if len(hello) > 0 {
				n.helloSend.Store(true)
			}
			for _, r := range replays {
				r.done <- 0
			}
			whole, retry = true, time.After(sweepEvery)
			continue
		}
		for _, r := range replays {
			r.done <- r.no
		}
		last, whole = cur, false
	}
}

// withMeta puts an announcement's number and since (unix nanoseconds, or
// 0) after the node id of its first line.
func withMeta(p string, no, since int64) string {
	meta := "\t" + strconv.FormatInt(no, 10) + " " + strconv.FormatInt(since, 10)
	if i := strings.IndexByte(p, '\n'); i >= 0 {
		return p[:i] + meta + p[i:]
	}
	return p + meta
}

// parseMeta reads what withMeta wrote (zero when absent or garbled).
func parseMeta(meta string) (no int64, since time.Time) {
	a, b, _ := strings.Cut(meta, " ")
	no, _ = strconv.ParseInt(a, 10, 64)
	if ns, err := strconv.ParseInt(b, 10, 64); err == nil && ns > 0 {
		since = time.Unix(0, ns)
	}
	return no, since
}

// maxAnnouncement bounds one announcement notification (PostgreSQL's
// payload limit is 8000 bytes), its number and since (withMeta) included.
const (
	maxAnnouncement = 7900
	metaReserve     = 48
)

// announcements cuts the announcement of keys into notifications that
// fit; a wantsOp's first notification is one even with no keys, the rest
// are wantOp. A key too long for one is announced as agent.WantAll.
func announcements(op, id string, keys []string) []string {
	var out []string
	var b strings.Builder
	start := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
			if op == wantsOp {
				op = wantOp
			}
		}
		b.WriteString(op + " " + id)
	}
	start()
	for _, k := range keys {
		if len(k)+len(id)+len(op)+2+metaReserve > maxAnnouncement {
			if op == unwantOp {
				continue // never announced as itself
			}
			k = agent.WantAll
		}
		if b.Len()+1+len(k)+metaReserve > maxAnnouncement {
			start()
		}
		b.WriteString("\n" + k)
	}
	if op == wantsOp || strings.Contains(b.String(), "\n") {
		out = append(out, b.String())
	}
	return out
}

// peerAnnounced handles a peer's announcement numbered no (on the
// listener's goroutine): the peer's set is updated, and when it starts
// wanting a session whose events were not published until now, the events
// of that session's runs executing here, or that ended since (the
// announcement's since), are queued for it; a replay queues the events of
// the runs it names that executed here. The acknowledgement of no is
// queued after them.
func (n *Node) peerAnnounced(op, id string, no int64, since time.Time, keys string) {
	var list []string
	if keys != "" {
		list = strings.Split(keys, "\n")
	}
	n.relayMu.Lock()
	defer n.relayMu.Unlock()
	defer n.ackLocked(id, no)
	if op == replayOp {
		var evs []agent.Event
		for _, runID := range list {
			evs = append(evs, n.runner.RunEvents(runID)...)
		}
		n.queueCatchUpLocked(evs)
		return
	}
	set, known := n.peerWants[id]
	switch {
	case op == wantsOp:
		set = make(map[string]bool, len(list))
	case !known || set == nil:
		return // its whole set was not seen yet: it gets everything
	default:
		set = maps.Clone(set)
	}
	for _, k := range list {
		if op == unwantOp {
			delete(set, k)
		} else {
			set[k] = true
		}
	}
	n.peerWants[id] = set
	old := n.scope.Load()
	sc := n.scopeLocked()
	if op == unwantOp || old == nil || old.all || int(n.peers.Load()) > old.known {
		return // nothing more is wanted than was published
	}
	var catchUp []agent.Event
	for _, k := range list {
		if k == agent.WantAll {
			catchUp = n.runner.Executing(agent.WantAll, since)
			break
		}
		if !old.keys[k] && sc.keys[k] {
			catchUp = append(catchUp, n.runner.Executing(k, since)...)
		}
	}
	n.queueCatchUpLocked(catchUp)
}

// queueCatchUpLocked queues events sent again for a peer; relayMu is
// held.
func (n *Node) queueCatchUpLocked(evs []agent.Event) {
	if len(evs) == 0 {
		return
	}
	n.catchUp = append(n.catchUp, evs...)
	select {
	case n.relayCh <- struct{}{}:
	default:
	}
}

// peerUnknown forgets what peer id (all peers, when id is "") wants: it
// gets everything until it announces its set again.
func (n *Node) peerUnknown(id string, gone bool) {
	n.relayMu.Lock()
	defer n.relayMu.Unlock()
	switch {
	case id == "":
		for k := range n.peerWants {
			n.peerWants[k] = nil
		}
	case gone:
		delete(n.peerWants, id)
	default:
		n.peerWants[id] = nil
	}
	n.scopeLocked()
}

// scopeLocked recomputes and installs the relay scope from the peers'
// sets; relayMu is held.
func (n *Node) scopeLocked() *relayScope {
	sc := &relayScope{keys: make(map[string]bool)}
	for _, set := range n.peerWants {
		if set == nil {
			sc.all = true
			continue
		}
		sc.known++
		for k := range set {
			if k == agent.WantAll {
				sc.all = true
			}
			sc.keys[k] = true
		}
	}
	n.scope.Store(sc)
	return sc
}

// prunePeers forgets the announcements of nodes that are no longer live
// (a node that died has its work adopted, but only its adopter is told).
func (n *Node) prunePeers(ctx context.Context) {
	rows, err := n.st.ListNodes(ctx)
	if err != nil {
		return // the next pass looks again
	}
	live := make(map[string]bool, len(rows))
	for _, r := range rows {
		if r.Alive {
			live[r.ID] = true
		}
	}
	n.acked.prune(live)
	n.kickRelease()
	n.relayMu.Lock()
	defer n.relayMu.Unlock()
	for id := range n.peerWants {
		if !live[id] {
			delete(n.peerWants, id)
		}
	}
	n.scopeLocked()
}

// wantedSince is since when this node wants the events of sessionKey's
// runs (zero: it does not).
func (n *Node) wantedSince(sessionKey string) time.Time {
	n.wantMu.Lock()
	defer n.wantMu.Unlock()
	since, all := n.wantSince[sessionKey], n.wantSince[agent.WantAll]
	if since.IsZero() || !all.IsZero() && all.Before(since) {
		since = all
	}
	return since
}

// caughtUp hands the runner an event sent again by the node that runs it,
// for this node's watchers and subscribers (wants.go): subscribers get it
// only when it was emitted after this node started wanting its session
// (it was sent late because the other node had not heard of that yet),
// watchers in any case. The runner drops what it has already. A node
// that does not want the session (the catch-up was another's) drops it:
// a watcher there that misses events asks for them (Replay).
func (n *Node) caughtUp(e relayed) error {
	since := n.wantedSince(e.sessionKey)
	if since.IsZero() {
		return nil
	}
	ev, err := e.decode()
	if err != nil {
		return err
	}
	if !ev.Time.Before(since) {
		n.runner.Relay(ev)
		return nil
	}
	n.runner.RelayLogged(e.runID, e.sessionKey, e.seq, func() (agent.Event, error) { return ev, nil })
	return nil
}
