package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/store"
)

// groupSessions makes n sessions (keys agent:main:g<i>, transcripts
// sid-g<i>) on s as node "a", claims their lanes and returns a context
// fenced by each claim and one fenced by the epoch before it.
func groupSessions(t testing.TB, s *Store, n int) (keys []string, fenced, stale []context.Context) {
	t.Helper()
	ctx := context.Background()
	s.SetNode("a")
	register(t, s, "a", time.Minute)
	for i := range n {
		key := fmt.Sprintf("agent:main:g%d", i)
		if err := s.CreateSession(ctx, &store.Session{Key: key, SessionID: "sid-" + key}); err != nil {
			t.Fatal(err)
		}
		_, epoch, err := s.ClaimLane(ctx, "a", key)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
		fenced = append(fenced, store.WithFence(ctx, store.Fence{Node: "a", SessionKey: key, Epoch: epoch}))
		stale = append(stale, store.WithFence(ctx, store.Fence{Node: "a", SessionKey: key, Epoch: epoch - 1}))
	}
	return keys, fenced, stale
}

// openIn opens run id of session key (transcript "sid-"+key) with a user
// message as its input, as a warm turn's open does.
func openIn(ctx context.Context, s *Store, key, id string) error {
	in := userMsg("hi " + id)
	in.RunID = id
	_, _, err := s.OpenRun(ctx, &store.Run{RunID: id, SessionKey: key, SessionID: "sid-" + key, AgentID: "main",
		Status: store.RunRunning, StartedAt: time.Now(), Input: []byte(`{}`)}, []store.Message{in})
	return err
}

// TestGroupedEnds: ends that arrive while one is in flight go as one
// transaction; when one member of the group is fenced, the group is
// rolled back and each member ends alone: the others commit, the fenced
// one is refused (ErrFenced) and writes nothing.
func TestGroupedEnds(t *testing.T) {
	ctx := context.Background()
	s := openNodes(t, 1)[0]
	keys, fenced, stale := groupSessions(t, s, 4)

	// round ends run round-<r>-<i> of each session, with stale's fence
	// for the sessions in bad, while the first session's end is in
	// flight.
	round := func(r int, bad map[int]bool) []error {
		t.Helper()
		for i, key := range keys {
			if err := openIn(fenced[i], s, key, fmt.Sprintf("run-%d-%d", r, i)); err != nil {
				t.Fatal(err)
			}
		}
		return inGroup(t, s, "sid-"+keys[0], len(keys), func(i int) error {
			c := fenced[i]
			if bad[i] {
				c = stale[i]
			}
			id := fmt.Sprintf("run-%d-%d", r, i)
			_, _, err := s.EndRun(c, id, store.RunResult{Status: store.RunOK}, "sid-"+keys[i], []store.Message{reply(id, "done")})
			return err
		})
	}
	status := func(id string) store.RunStatus {
		t.Helper()
		run, err := s.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return run.Status
	}

	// A group with the third session's end fenced.
	errs := round(1, map[int]bool{2: true})
	for i, err := range errs {
		id := fmt.Sprintf("run-1-%d", i)
		if i == 2 {
			if !errors.Is(err, store.ErrFenced) || status(id) != store.RunRunning {
				t.Fatalf("fenced member: %v, run %s; want ErrFenced and the run still running", err, status(id))
			}
			continue
		}
		if err != nil || status(id) != store.RunOK {
			t.Fatalf("member %d: %v, run %s; want it ended", i, err, status(id))
		}
	}
	if g, f := s.ends.groups.Load(), s.ends.failed.Load(); g != 0 || f != 1 {
		t.Fatalf("%d groups committed, %d rolled back; want 0 and 1", g, f)
	}
	if n, _ := s.CountMessages(ctx, "sid-"+keys[2]); n != 1 {
		t.Fatalf("fenced member's transcript has %d messages, want its input only", n)
	}
	if _, err := s.FinishRun(fenced[2], "run-1-2", store.RunResult{Status: store.RunAborted}); err != nil {
		t.Fatal(err)
	}

	// A group of good members commits as one.
	for i, err := range round(2, nil) {
		id := fmt.Sprintf("run-2-%d", i)
		if err != nil || status(id) != store.RunOK {
			t.Fatalf("member %d: %v, run %s; want it ended", i, err, status(id))
		}
	}
	if g, f := s.ends.groups.Load(), s.ends.failed.Load(); g != 1 || f != 1 {
		t.Fatalf("%d groups committed, %d rolled back; want 1 and 1", g, f)
	}
	for i, key := range keys {
		want := int64(4) // two turns' input and reply
		if i == 2 {
			want = 3 // its first reply was refused
		}
		msgs, err := s.History(ctx, "sid-"+key, store.HistoryOptions{})
		if err != nil || int64(len(msgs)) != want {
			t.Fatalf("session %d: %d messages (%v), want %d", i, len(msgs), err, want)
		}
		for j := 1; j < len(msgs); j++ { // one chain, in order
			if msgs[j].Seq != msgs[j-1].Seq+1 || msgs[j].Entry.ParentID == nil || *msgs[j].Entry.ParentID != msgs[j-1].Entry.ID {
				t.Fatalf("session %d: message %d does not follow %d", i, j, j-1)
			}
		}
		// The session row the end wrote is the one served next.
		if sess, err := s.GetSession(ctx, key); err != nil || sess.UpdatedAt.IsZero() {
			t.Fatalf("session %d after the group: %+v, %v", i, sess, err)
		}
	}
}

// TestGroupedEndsConcurrent: many sessions' turns at once, every third
// end tried first with a stale fence: each stale end is refused and
// writes nothing, each good one lands once, whether alone or grouped.
func TestGroupedEndsConcurrent(t *testing.T) {
	ctx := context.Background()
	s := openNodes(t, 1)[0]
	const sessions, turns = 8, 12
	keys, fenced, stale := groupSessions(t, s, sessions)
	var wg sync.WaitGroup
	for i, key := range keys {
		wg.Go(func() {
			for turn := range turns {
				id := fmt.Sprintf("run-%d-%d", i, turn)
				if err := openIn(fenced[i], s, key, id); err != nil {
					t.Error(err)
					return
				}
				if turn%3 == 0 {
					_, stored, err := s.EndRun(stale[i], id, store.RunResult{Status: store.RunOK}, "sid-"+key, []store.Message{reply(id, "late")})
					if !errors.Is(err, store.ErrFenced) || stored != nil {
						t.Errorf("stale end of %s: %v, %v; want ErrFenced", id, stored, err)
						return
					}
				}
				run, stored, err := s.EndRun(fenced[i], id, store.RunResult{Status: store.RunOK}, "sid-"+key, []store.Message{reply(id, "done")})
				if err != nil || run.Status != store.RunOK || len(stored) != 1 || stored[0].Seq != int64(2*turn+2) {
					t.Errorf("end of %s: %+v, %+v, %v", id, run, stored, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, key := range keys {
		msgs, err := s.History(ctx, "sid-"+key, store.HistoryOptions{})
		if err != nil || len(msgs) != 2*turns {
			t.Fatalf("%s: %d messages (%v), want %d", key, len(msgs), err, 2*turns)
		}
		for j, m := range msgs {
			if m.Entry.Message == nil || (j%2 == 1) != (m.Entry.Message.Role == "assistant") || (j%2 == 1 && *m.Entry.Message.Content.Blocks[0].Text != "done") {
				t.Fatalf("%s: message %d is %+v", key, j, m.Entry.Message)
			}
		}
	}
	t.Logf("%d groups committed, %d rolled back", s.ends.groups.Load(), s.ends.failed.Load())
}

// inGroup runs op(0) … op(n-1) at once on s so that op(1) … op(n-1) go to
// s's group committer as one group: op(0)'s transaction is held in flight
// by transcript sessionID's lock (op(0) must take it), which inGroup holds
// until the others have joined. It returns their errors.
func inGroup(t *testing.T, s *Store, sessionID string, n int, op func(i int) error) []error {
	t.Helper()
	ctx := context.Background()
	holder, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	lock := transcriptLockKey(sessionID)
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, lock); err != nil {
		t.Fatal(err)
	}
	joined := make(chan struct{})
	holdFlights(s)
	defer s.ends.stallAfter.Store(0)
	s.ends.mu.Lock()
	s.ends.joined = func(_ *groupMember, k int) {
		if k == n-1 {
			close(joined)
		}
	}
	s.ends.mu.Unlock()
	errs := make([]error, n)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = op(0) })
	// op(0) is in flight once it waits for the lock.
	for {
		var waiting bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted)`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
	}
	for i := 1; i < n; i++ {
		wg.Go(func() { errs[i] = op(i) })
	}
	<-joined
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, lock); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	return errs
}

// TestGroupedOpens: runs' opens (on a remembered tail) that arrive while
// a transaction is in flight go as one group, with ends: a group with a
// fenced open is rolled back, the others then open alone and the fenced
// one is refused, writing neither its run nor its input; a group of good
// opens commits as one, each input chained after its transcript's tail.
func TestGroupedOpens(t *testing.T) {
	ctx := context.Background()
	s := openNodes(t, 1)[0]
	keys, fenced, stale := groupSessions(t, s, 4)
	// A first turn in each session, so the store remembers the tails.
	for i, key := range keys {
		id := fmt.Sprintf("first-%d", i)
		if err := openIn(fenced[i], s, key, id); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.EndRun(fenced[i], id, store.RunResult{Status: store.RunOK}, "sid-"+key, []store.Message{reply(id, "done")}); err != nil {
			t.Fatal(err)
		}
	}
	round := func(r int, bad map[int]bool) []error {
		return inGroup(t, s, "sid-"+keys[0], len(keys), func(i int) error {
			c := fenced[i]
			if bad[i] {
				c = stale[i]
			}
			return openIn(c, s, keys[i], fmt.Sprintf("run-%d-%d", r, i))
		})
	}
	g0, f0 := s.ends.groups.Load(), s.ends.failed.Load()
	for i, err := range round(1, map[int]bool{1: true}) {
		if i == 1 {
			if !errors.Is(err, store.ErrFenced) {
				t.Fatalf("fenced open: %v, want ErrFenced", err)
			}
			if _, err := s.GetRun(ctx, "run-1-1"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("fenced open's run: %v, want ErrNotFound", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
	}
	if g, f := s.ends.groups.Load()-g0, s.ends.failed.Load()-f0; g != 0 || f != 1 {
		t.Fatalf("%d groups committed, %d rolled back; want 0 and 1", g, f)
	}
	// The good ones end (alone), and a group of good opens commits as one.
	for i, key := range keys {
		if i == 1 {
			continue
		}
		id := fmt.Sprintf("run-1-%d", i)
		if _, _, err := s.EndRun(fenced[i], id, store.RunResult{Status: store.RunOK}, "sid-"+key, []store.Message{reply(id, "done")}); err != nil {
			t.Fatal(err)
		}
	}
	for i, err := range round(2, nil) {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
	}
	if g, f := s.ends.groups.Load()-g0, s.ends.failed.Load()-f0; g != 1 || f != 1 {
		t.Fatalf("%d groups committed, %d rolled back; want 1 and 1", g, f)
	}
	for i, key := range keys {
		want := 5 // first turn, round 1's turn, round 2's input
		if i == 1 {
			want = 3
		}
		msgs, err := s.History(ctx, "sid-"+key, store.HistoryOptions{})
		if err != nil || len(msgs) != want {
			t.Fatalf("session %d: %d messages (%v), want %d", i, len(msgs), err, want)
		}
		for j := 1; j < len(msgs); j++ {
			if msgs[j].Seq != msgs[j-1].Seq+1 || msgs[j].Entry.ParentID == nil || *msgs[j].Entry.ParentID != msgs[j-1].Entry.ID {
				t.Fatalf("session %d: message %d does not follow %d", i, j, j-1)
			}
		}
		if run, err := s.GetRun(ctx, fmt.Sprintf("run-2-%d", i)); err != nil || run.Status != store.RunRunning {
			t.Fatalf("session %d: round 2's run %+v, %v; want it running", i, run, err)
		}
	}
}

// TestGroupOutlivesItsSender: a group is sent on behalf of all its
// members: when the member that sends it gives up while it is in flight,
// the others' ends still commit (and so does its own: the outcome is the
// group's).
func TestGroupOutlivesItsSender(t *testing.T) {
	ctx := context.Background()
	s := openNodes(t, 1)[0]
	keys, fenced, _ := groupSessions(t, s, 4)
	ctxs := make([]context.Context, len(keys))
	cancels := make([]context.CancelFunc, len(keys))
	for i, key := range keys {
		if err := openIn(fenced[i], s, key, fmt.Sprintf("run-%d", i)); err != nil {
			t.Fatal(err)
		}
		ctxs[i], cancels[i] = context.WithCancel(fenced[i])
		defer cancels[i]()
	}
	// Session 0's end is held in flight by its transcript's lock; the
	// group of the others is held, once sent, by session 3's.
	holder, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	lock0, lock3 := transcriptLockKey("sid-"+keys[0]), transcriptLockKey("sid-"+keys[3])
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1), pg_advisory_lock($2)`, lock0, lock3); err != nil {
		t.Fatal(err)
	}
	waiter := func() {
		t.Helper()
		for {
			var waiting bool
			if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted)`).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
			if waiting {
				return
			}
		}
	}
	var (
		first  = make(chan context.Context, 1)
		joined = make(chan struct{})
	)
	holdFlights(s)
	s.ends.mu.Lock()
	s.ends.joined = func(m *groupMember, n int) {
		if n == 1 {
			first <- m.ctx // the group's sender
		}
		if n == len(keys)-1 {
			close(joined)
		}
	}
	s.ends.mu.Unlock()
	errs := make([]error, len(keys))
	end := func(i int) {
		id := fmt.Sprintf("run-%d", i)
		_, _, errs[i] = s.EndRun(ctxs[i], id, store.RunResult{Status: store.RunOK}, "sid-"+keys[i], []store.Message{reply(id, "done")})
	}
	var wg sync.WaitGroup
	wg.Go(func() { end(0) })
	waiter()
	for i := 1; i < len(keys); i++ {
		wg.Go(func() { end(i) })
	}
	<-joined
	sender := <-first
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, lock0); err != nil {
		t.Fatal(err)
	}
	waiter() // the group, at session 3's lock
	for i := range keys {
		if ctxs[i] == sender {
			cancels[i]()
		}
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, lock3); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, err := range errs {
		run, gerr := s.GetRun(ctx, fmt.Sprintf("run-%d", i))
		if err != nil || gerr != nil || run.Status != store.RunOK {
			t.Errorf("end %d: %v; run %+v, %v", i, err, run, gerr)
		}
	}
	if g := s.ends.groups.Load(); g != 1 {
		t.Fatalf("%d groups committed, want 1", g)
	}
}

// TestGroupAndAdoptionDoNotDeadlock: a group share-locks its members'
// lanes, one member after the other, and an adoption deletes a dead
// node's lanes: both take them in the lanes' key order, so that a group
// whose node's lease ends while it is in flight holds the adoption up
// until it commits, and neither waits for the other in a cycle (which
// the server would break after deadlock_timeout by failing one of them).
// The group here arrives in the other order: session 3's end, then
// session 1's; the adoption finds the lanes in the order they were
// claimed (0 to 3).
func TestGroupAndAdoptionDoNotDeadlock(t *testing.T) {
	ctx := context.Background()
	nodes := openNodes(t, 2)
	s, b := nodes[0], nodes[1]
	keys, fenced, _ := groupSessions(t, s, 4)
	register(t, b, "b", time.Minute)
	b.SetNode("b")
	for i, key := range keys {
		if err := openIn(fenced[i], s, key, fmt.Sprintf("run-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	holder, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	lock0, lock3 := transcriptLockKey("sid-"+keys[0]), transcriptLockKey("sid-"+keys[3])
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1), pg_advisory_lock($2)`, lock0, lock3); err != nil {
		t.Fatal(err)
	}
	waitFor := func(sql string, n int) { t.Helper(); waitForLockWaiters(t, s, sql, n) }
	joined, errs, end := heldEnds(s, keys)
	// Session 0's end (unfenced: it holds no lane) is in flight, held by
	// its transcript's lock, while sessions 3 and 1 join, in that order.
	var wg sync.WaitGroup
	first := make(chan struct{})
	wg.Go(func() { end(ctx, 0); close(first) })
	waitFor(`locktype = 'advisory'`, 1)
	wg.Go(func() { end(fenced[3], 3) })
	<-joined
	wg.Go(func() { end(fenced[1], 1) })
	<-joined
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, lock0); err != nil {
		t.Fatal(err)
	}
	<-first
	waitFor(`locktype = 'advisory'`, 1) // the group, at session 3's lock
	// Node a is given up for dead meanwhile: the adoption deletes its
	// lanes, waiting for those the group holds.
	adopted := make(chan error, 1)
	go func() {
		_, err := b.AdoptDead(ctx, "node gone", "a")
		adopted <- err
	}()
	waitFor(`locktype <> 'advisory'`, 1)
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, lock3); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := <-adopted; err != nil {
		t.Errorf("adoption: %v", err)
	}
	for _, i := range []int{0, 1, 3} {
		run, gerr := s.GetRun(ctx, fmt.Sprintf("run-%d", i))
		if errs[i] != nil || gerr != nil || run.Status != store.RunOK {
			t.Errorf("end %d: %v; run %+v, %v", i, errs[i], run, gerr)
		}
	}
	if run, err := s.GetRun(ctx, "run-2"); err != nil || run.Status != store.RunAborted {
		t.Errorf("run-2, adopted: %+v, %v", run, err)
	}
}

// TestAdoptionDeletesLanesInKeyOrder: an adoption locks the dead node's
// lanes in their keys' order, as a group of fenced writes does, whatever
// their order in the table: here session 1's lane was claimed again, so
// that a scan finds it after session 3's, and the group (ends of sessions
// 1 and 3) is held between its two lanes by a lock on session 1's run.
func TestAdoptionDeletesLanesInKeyOrder(t *testing.T) {
	ctx := context.Background()
	nodes := openNodes(t, 2)
	s, b := nodes[0], nodes[1]
	keys, fenced, _ := groupSessions(t, s, 4)
	register(t, b, "b", time.Minute)
	b.SetNode("b")
	// Session 1's lane claimed again: its row now follows session 3's.
	if _, err := s.ReleaseLanes(ctx, "a", keys[1:2]); err != nil {
		t.Fatal(err)
	}
	_, epoch, err := s.ClaimLane(ctx, "a", keys[1])
	if err != nil {
		t.Fatal(err)
	}
	fenced[1] = store.WithFence(ctx, store.Fence{Node: "a", SessionKey: keys[1], Epoch: epoch})
	for i, key := range keys {
		if err := openIn(fenced[i], s, key, fmt.Sprintf("run-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var order []string
	rows, err := s.pool.Query(ctx, `SELECT session_key FROM lanes WHERE node_id = 'a'`)
	if err != nil {
		t.Fatal(err)
	}
	if order, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []string{keys[0], keys[2], keys[3], keys[1]}) {
		t.Fatalf("lanes in the table's order %q", order)
	}
	holder, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	lock0 := transcriptLockKey("sid-" + keys[0])
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, lock0); err != nil {
		t.Fatal(err)
	}
	runLock, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer runLock.Rollback(ctx)
	if _, err := runLock.Exec(ctx, `SELECT 1 FROM runs WHERE run_id = 'run-1' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	waitFor := func(sql string, n int) { t.Helper(); waitForLockWaiters(t, s, sql, n) }
	joined, errs, end := heldEnds(s, keys)
	var wg sync.WaitGroup
	first := make(chan struct{})
	wg.Go(func() { end(ctx, 0); close(first) })
	waitFor(`locktype = 'advisory'`, 1)
	wg.Go(func() { end(fenced[1], 1) })
	<-joined
	wg.Go(func() { end(fenced[3], 3) })
	<-joined
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, lock0); err != nil {
		t.Fatal(err)
	}
	<-first
	waitFor(`locktype <> 'advisory'`, 1) // the group, at session 1's run
	adopted := make(chan error, 1)
	go func() {
		_, err := b.AdoptDead(ctx, "node gone", "a")
		adopted <- err
	}()
	waitFor(`locktype <> 'advisory'`, 2) // the adoption, at a lane the group holds
	if err := runLock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := <-adopted; err != nil {
		t.Errorf("adoption: %v", err)
	}
	for _, i := range []int{0, 1, 3} {
		run, gerr := s.GetRun(ctx, fmt.Sprintf("run-%d", i))
		if errs[i] != nil || gerr != nil || run.Status != store.RunOK {
			t.Errorf("end %d: %v; run %+v, %v", i, errs[i], run, gerr)
		}
	}
}

// TestStalledFlightHandsOver: a flight that waits (a lock held by a paused
// node) holds up the members that come meanwhile for stallAfter only:
// they then go as the next flight beside it, and the stalled one still
// ends with its own outcome. No database: groups of one go alone.
func TestStalledFlightHandsOver(t *testing.T) {
	g := &groupCommitter{}
	g.stallAfter.Store(int64(time.Millisecond))
	started, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- g.commit(nil, &groupMember{ctx: context.Background(), alone: func(context.Context) error {
			close(started)
			<-release // stuck on a lock until the test lets it go
			return errors.New("first's outcome")
		}})
	}()
	<-started
	second := make(chan error, 1)
	go func() {
		second <- g.commit(nil, &groupMember{ctx: context.Background(), alone: func(context.Context) error { return nil }})
	}()
	select {
	case err := <-second:
		if err != nil {
			t.Errorf("second: %v", err)
		}
	case <-time.After(30 * time.Second): // a guard: it goes after 1 ms
		t.Fatal("the member that came during a stalled flight waited for it")
	}
	close(release)
	if err := <-first; err == nil || err.Error() != "first's outcome" {
		t.Errorf("stalled flight's outcome: %v", err)
	}
	// The committer is free again: the next member goes alone, at once.
	if err := g.commit(nil, &groupMember{ctx: context.Background(), alone: func(context.Context) error { return nil }}); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	busy, waiting := g.busy, len(g.waiting)
	g.mu.Unlock()
	if busy || waiting != 0 || g.stalled.Load() == 0 {
		t.Errorf("after: busy %v, %d waiting, %d stalled", busy, waiting, g.stalled.Load())
	}
}

// holdFlights keeps s's stalled flights holding up the members that come
// meanwhile: the tests that stall a flight on purpose (a lock they hold)
// to gather a group need its members to wait, not to be handed its place
// (TestStalledFlightHandsOver).
func holdFlights(s *Store) { s.ends.stallAfter.Store(int64(time.Hour)) }

// waitForLockWaiters waits until n locks that sql (a condition on
// pg_locks) selects are waited for.
func waitForLockWaiters(t *testing.T, s *Store, sql string, n int) {
	t.Helper()
	for {
		var waiting int
		if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks WHERE NOT granted AND `+sql).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
	}
}

// heldEnds holds s's end flights (holdFlights) and reports each member
// that joins one on joined; end ends run-i of session keys[i] under ctx,
// its error in errs[i].
func heldEnds(s *Store, keys []string) (joined chan int, errs []error, end func(ctx context.Context, i int)) {
	joined = make(chan int, len(keys))
	holdFlights(s)
	s.ends.mu.Lock()
	s.ends.joined = func(_ *groupMember, n int) { joined <- n }
	s.ends.mu.Unlock()
	errs = make([]error, len(keys))
	end = func(ctx context.Context, i int) {
		id := fmt.Sprintf("run-%d", i)
		_, _, errs[i] = s.EndRun(ctx, id, store.RunResult{Status: store.RunOK}, "sid-"+keys[i], []store.Message{reply(id, "done")})
	}
	return joined, errs, end
}
