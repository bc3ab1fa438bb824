package outbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlite"
)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func openStore(t *testing.T, c *clock) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "db"), sqlite.Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func put(t *testing.T, st store.Store, id, kind string, at time.Time) {
	t.Helper()
	if err := st.PutOutbox(t.Context(), &store.OutboxItem{ID: id, Kind: kind, SessionKey: "agent:main:main", CreatedAt: at}); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, st store.Store, id string) *store.OutboxItem {
	t.Helper()
	it, err := st.GetOutbox(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return it
}

func TestBackoff(t *testing.T) {
	d, err := New(Config{Store: openStore(t, &clock{now: t0}), Handlers: []Handler{{Kind: "k", Batch: func(context.Context, []*store.OutboxItem) map[string]error { return nil }}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		attempts int
		want     time.Duration
	}{{1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {6, 32 * time.Second}, {7, time.Minute}, {40, time.Minute}} {
		if got := d.Backoff(tt.attempts); got != tt.want {
			t.Errorf("Backoff(%d) = %v, want %v", tt.attempts, got, tt.want)
		}
	}
}

func TestNewRefusesBadHandlers(t *testing.T) {
	st := openStore(t, &clock{now: t0})
	batch := func(context.Context, []*store.OutboxItem) map[string]error { return nil }
	each := func(context.Context, *store.OutboxItem) error { return nil }
	for _, hs := range [][]Handler{
		{{Kind: "", Batch: batch}},
		{{Kind: "k"}},
		{{Kind: "k", Batch: batch, Each: each}},
		{{Kind: "k", Batch: batch}, {Kind: "k", Each: each}},
	} {
		if _, err := New(Config{Store: st, Handlers: hs}); err == nil {
			t.Errorf("New(%d handlers) accepted a bad set", len(hs))
		}
	}
}

// TestRegister: a handler handed in after New is checked like one given
// to New, and none is taken once the dispatcher started.
func TestRegister(t *testing.T) {
	st := openStore(t, &clock{now: t0})
	each := func(context.Context, *store.OutboxItem) error { return nil }
	d, err := New(Config{Store: st, Handlers: []Handler{{Kind: "a", Each: each}}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, h := range []Handler{{Kind: "a", Each: each}, {Kind: "b"}, {Kind: ""}} {
		if err := d.Register(h); err == nil {
			t.Errorf("Register(%q) accepted a bad handler", h.Kind)
		}
	}
	if err := d.Register(Handler{Kind: "b", Each: each}); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	if err := d.Register(Handler{Kind: "c", Each: each}); err == nil {
		t.Error("Register after Start accepted")
	}
}

// TestBatchOutcomes: delivered, deferred, retried with backoff, dead by
// Permanent, dead after MaxAttempts, dead after Expiry, left alone.
func TestBatchOutcomes(t *testing.T) {
	c := &clock{now: t0}
	st := openStore(t, c)
	for _, id := range []string{"ok", "later", "flaky", "broken", "untouched"} {
		put(t, st, id, "k", t0)
	}
	put(t, st, "old", "k", t0.Add(-2*time.Hour))
	put(t, st, "other-kind", "x", t0)
	var seen []string
	h := Handler{Kind: "k", MaxAttempts: 3, Expiry: time.Hour, Batch: func(_ context.Context, items []*store.OutboxItem) map[string]error {
		seen = seen[:0]
		out := map[string]error{}
		for _, it := range items {
			seen = append(seen, it.ID)
			switch it.ID {
			case "ok":
				out[it.ID] = nil
			case "later":
				out[it.ID] = ErrDefer
			case "flaky", "old":
				out[it.ID] = errors.New("target unavailable")
			case "broken":
				out[it.ID] = Permanent(errors.New("bad payload"))
			}
		}
		return out
	}}
	d, err := New(Config{Store: st, Handlers: []Handler{h}, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	if n := d.Pass(t.Context()); n != 1 {
		t.Errorf("first pass delivered %d, want 1", n)
	}
	if len(seen) != 6 {
		t.Errorf("handler saw %v, want the six due items of kind k", seen)
	}
	for id, want := range map[string]store.OutboxStatus{"ok": store.OutboxDelivered, "later": store.OutboxPending, "flaky": store.OutboxPending,
		"broken": store.OutboxDead, "untouched": store.OutboxPending, "old": store.OutboxDead, "other-kind": store.OutboxPending} {
		if it := get(t, st, id); it.Status != want {
			t.Errorf("%s: status %s, want %s", id, it.Status, want)
		}
	}
	if it := get(t, st, "later"); it.Attempts != 0 || !it.NextAttemptAt.Equal(t0) {
		t.Errorf("deferred item changed: %+v", it)
	}
	flaky := get(t, st, "flaky")
	if flaky.Attempts != 1 || !flaky.NextAttemptAt.Equal(t0.Add(time.Second)) || flaky.LastError != "target unavailable" {
		t.Errorf("after one failure: %+v", flaky)
	}
	if got := get(t, st, "broken").LastError; got != "bad payload" {
		t.Errorf("dead item's error = %q", got)
	}
	// Not due again until its backoff has passed.
	d.Pass(t.Context())
	if it := get(t, st, "flaky"); it.Attempts != 1 {
		t.Errorf("retried before its backoff: %+v", it)
	}
	c.Add(time.Second)
	d.Pass(t.Context())
	c.Add(2 * time.Second)
	d.Pass(t.Context())
	if it := get(t, st, "flaky"); it.Status != store.OutboxDead || it.Attempts != 3 {
		t.Errorf("after MaxAttempts failures: %+v", it)
	}
}

// TestEachRunsOnceAndResumes: an Each item runs in one goroutine at a time
// however often it is dispatched; Close cuts it short and leaves it
// pending, and a new dispatcher (a restart) runs it to the end.
func TestEachRunsOnceAndResumes(t *testing.T) {
	c := &clock{now: t0}
	st := openStore(t, c)
	put(t, st, "flow", "a2a", t0)
	var running, maxRunning, runs atomic.Int32
	release := make(chan struct{})
	each := func(ctx context.Context, it *store.OutboxItem) error {
		runs.Add(1)
		n := running.Add(1)
		defer running.Add(-1)
		for {
			m := maxRunning.Load()
			if n <= m || maxRunning.CompareAndSwap(m, n) {
				break
			}
		}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	d, err := New(Config{Store: st, Handlers: []Handler{{Kind: "a2a", Each: each}}, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		d.Pass(t.Context())
	}
	waitFor(t, func() bool { return runs.Load() == 1 })
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close = %v, want net.ErrClosed", err)
	}
	if it := get(t, st, "flow"); it.Status != store.OutboxPending || it.Attempts != 0 {
		t.Errorf("a flow cut by Close was settled: %+v", it)
	}
	if maxRunning.Load() != 1 {
		t.Errorf("ran %d at once", maxRunning.Load())
	}

	close(release)
	d2, err := New(Config{Store: st, Handlers: []Handler{{Kind: "a2a", Each: each}}, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := d2.Start(); err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	waitFor(t, func() bool { return get(t, st, "flow").Status == store.OutboxDelivered })
}

func TestPruneAndRedeliver(t *testing.T) {
	c := &clock{now: t0}
	st := openStore(t, c)
	fail := atomic.Bool{}
	fail.Store(true)
	h := Handler{Kind: "k", MaxAttempts: 1, Retention: time.Hour, Batch: func(_ context.Context, items []*store.OutboxItem) map[string]error {
		out := map[string]error{}
		for _, it := range items {
			if fail.Load() {
				out[it.ID] = errors.New("nope")
			} else {
				out[it.ID] = nil
			}
		}
		return out
	}}
	d, err := New(Config{Store: st, Handlers: []Handler{h}, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	put(t, st, "a", "k", t0)
	put(t, st, "foreign", "unregistered", t0)
	d.Pass(t.Context())
	if it := get(t, st, "a"); it.Status != store.OutboxDead {
		t.Fatalf("not dead: %+v", it)
	}
	if _, err := d.Redeliver(t.Context(), "foreign"); err == nil {
		t.Error("redelivered an item of a kind the dispatcher does not serve")
	}
	fail.Store(false)
	it, err := d.Redeliver(t.Context(), "a")
	if err != nil || it.Status != store.OutboxPending || it.Attempts != 0 {
		t.Fatalf("Redeliver = %+v, %v", it, err)
	}
	d.Pass(t.Context())
	if it := get(t, st, "a"); it.Status != store.OutboxDelivered {
		t.Fatalf("after redelivery: %+v", it)
	}
	if _, err := d.Redeliver(t.Context(), "a"); err == nil {
		t.Error("redelivered a delivered item")
	}
	if n := d.Prune(t.Context()); n != 0 {
		t.Errorf("pruned %d before the retention passed", n)
	}
	c.Add(2 * time.Hour)
	if n := d.Prune(t.Context()); n != 1 {
		t.Errorf("pruned %d, want 1", n)
	}
	if _, err := st.GetOutbox(t.Context(), "a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("pruned item still there: %v", err)
	}
}

// TestKickSession: between full scans only the kicked sessions are listed.
func TestKickSession(t *testing.T) {
	c := &clock{now: t0}
	st := openStore(t, c)
	var mu sync.Mutex
	var got []string
	h := Handler{Kind: "k", Batch: func(_ context.Context, items []*store.OutboxItem) map[string]error {
		out := map[string]error{}
		mu.Lock()
		defer mu.Unlock()
		for _, it := range items {
			got = append(got, it.ID)
			out[it.ID] = nil
		}
		return out
	}}
	d, err := New(Config{Store: st, Handlers: []Handler{h}, Now: c.Now, FullScanInterval: time.Hour, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	waitFor(t, func() bool { return true }) // let the first full scan (of nothing) pass
	time.Sleep(50 * time.Millisecond)
	if err := st.PutOutbox(t.Context(), &store.OutboxItem{ID: "x", Kind: "k", SessionKey: "agent:main:x", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	d.KickSession("k", "agent:main:x")
	waitFor(t, func() bool { return get(t, st, "x").Status == store.OutboxDelivered })
	if err := d.Start(); err == nil {
		t.Error("a second Start succeeded")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met in 10s")
}

// TestSharedEachRunsOnOneDispatcher runs two dispatchers on one store, as
// two gateway nodes do: an Each item runs on one of them only, and a
// dispatcher that stops hands it back at once to the other.
func TestSharedEachRunsOnOneDispatcher(t *testing.T) {
	c := &clock{now: t0}
	st := openStore(t, c)
	put(t, st, "flow", "a2a", t0)
	var runs atomic.Int32
	release := make(chan struct{})
	each := func(ctx context.Context, it *store.OutboxItem) error {
		runs.Add(1)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var ds []*Dispatcher
	for range 2 {
		d, err := New(Config{Store: st, Handlers: []Handler{{Kind: "a2a", Each: each}}, Now: c.Now, Shared: true})
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	for range 3 {
		for _, d := range ds {
			d.Pass(t.Context())
		}
	}
	waitFor(t, func() bool { return runs.Load() == 1 })
	time.Sleep(50 * time.Millisecond)
	if n := runs.Load(); n != 1 {
		t.Fatalf("the item ran %d times on two dispatchers", n)
	}
	if it := get(t, st, "flow"); !it.NextAttemptAt.After(t0) {
		t.Errorf("running item not claimed: due %v", it.NextAttemptAt)
	}
	// Whichever runs it stops: the item is due again at once.
	ds[0].Close()
	ds[1].Close()
	if it := get(t, st, "flow"); it.Status != store.OutboxPending || it.NextAttemptAt.After(t0) {
		t.Errorf("item after its dispatcher stopped = %+v, want pending and due", it)
	}
	close(release)
	d3, err := New(Config{Store: st, Handlers: []Handler{{Kind: "a2a", Each: each}}, Now: c.Now, Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := d3.Start(); err != nil {
		t.Fatal(err)
	}
	defer d3.Close()
	waitFor(t, func() bool { return get(t, st, "flow").Status == store.OutboxDelivered })
}

// TestStaleListingDoesNotRunASettledItem: an item a pass listed while an
// earlier run of it was settling must not run again once it is settled (a
// channel reply was sent twice under load this way).
func TestStaleListingDoesNotRunASettledItem(t *testing.T) {
	c := &clock{now: t0}
	st := openStore(t, c)
	put(t, st, "reply", "channel", t0)
	var runs atomic.Int32
	each := func(ctx context.Context, it *store.OutboxItem) error {
		runs.Add(1)
		return nil
	}
	d, err := New(Config{Store: st, Handlers: []Handler{{Kind: "channel", Each: each}}, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	stale := get(t, st, "reply") // the listing, taken while pending
	d.Pass(t.Context())
	waitFor(t, func() bool { return get(t, st, "reply").Status == store.OutboxDelivered })
	// The settled run's goroutine may still hold the item: wait for it.
	waitFor(t, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return !d.inFlight["reply"]
	})
	h := d.handlers["channel"]
	d.runEach(h, stale)
	d.wg.Wait()
	if n := runs.Load(); n != 1 {
		t.Fatalf("the item ran %d times, want 1", n)
	}
}

// heldUpdates holds every UpdateOutbox until open is closed, counting
// those in flight.
type heldUpdates struct {
	*sqlite.Store
	inFlight atomic.Int32
	open     chan struct{}
}

func (h *heldUpdates) UpdateOutbox(ctx context.Context, id string, fn func(*store.OutboxItem) error) (*store.OutboxItem, error) {
	h.inFlight.Add(1)
	<-h.open
	return h.Store.UpdateOutbox(ctx, id, fn)
}

// TestBatchOutcomesSettledTogether: the outcomes of one batch are recorded
// side by side (with SQLite's group commit, in one commit), not one write
// after another; a deferred item is not written.
func TestBatchOutcomesSettledTogether(t *testing.T) {
	c := &clock{now: t0}
	st := openStore(t, c)
	for _, id := range []string{"a", "b", "c", "later"} {
		put(t, st, id, "k", t0)
	}
	held := &heldUpdates{Store: st, open: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(held.open) }) }
	t.Cleanup(release)
	h := Handler{Kind: "k", Batch: func(_ context.Context, items []*store.OutboxItem) map[string]error {
		return map[string]error{"a": nil, "b": nil, "c": errors.New("retry"), "later": ErrDefer}
	}}
	d, err := New(Config{Store: held, Handlers: []Handler{h}, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	passed := make(chan int, 1)
	go func() { passed <- d.Pass(context.Background()) }()
	waitFor(t, func() bool { return held.inFlight.Load() == 3 })
	release()
	if n := <-passed; n != 2 {
		t.Errorf("pass delivered %d, want 2", n)
	}
	if n := held.inFlight.Load(); n != 3 {
		t.Errorf("%d outcome writes, want 3 (none for the deferred item)", n)
	}
	for id, want := range map[string]store.OutboxStatus{"a": store.OutboxDelivered, "b": store.OutboxDelivered, "c": store.OutboxPending, "later": store.OutboxPending} {
		if it := get(t, st, id); it.Status != want {
			t.Errorf("%s: status %s, want %s", id, it.Status, want)
		}
	}
	if it := get(t, st, "c"); it.Attempts != 1 {
		t.Errorf("failed item's attempts = %d, want 1", it.Attempts)
	}
}

// countedLists counts the listings of one session's items.
type countedLists struct {
	*sqlite.Store
	key   string
	lists atomic.Int32
}

func (c *countedLists) ListOutbox(ctx context.Context, f store.OutboxFilter) ([]*store.OutboxItem, error) {
	if f.SessionKey == c.key {
		c.lists.Add(1)
	}
	return c.Store.ListOutbox(ctx, f)
}

// TestRunningEachItemsNotListedAgain: once a kicked session's Each items
// run, the passes that follow (every run's end wakes the dispatcher) do
// not list that session again while they run; a new kick of it does.
func TestRunningEachItemsNotListedAgain(t *testing.T) {
	c := &clock{now: t0}
	const key = "agent:main:sender"
	st := &countedLists{Store: openStore(t, c), key: key}
	release := make(chan struct{})
	var runs atomic.Int32
	each := func(ctx context.Context, it *store.OutboxItem) error {
		runs.Add(1)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	d, err := New(Config{Store: st, Handlers: []Handler{{Kind: "a2a", Each: each}}, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	putFor := func(id string) {
		t.Helper()
		if err := st.PutOutbox(t.Context(), &store.OutboxItem{ID: id, Kind: "a2a", SessionKey: key, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		d.KickSession("a2a", key)
	}
	putFor("flow-1")
	for range 4 { // the kick's pass, then three passes woken by other work
		d.targeted(t.Context())
	}
	if n := st.lists.Load(); n != 1 {
		t.Errorf("the session was listed %d times while its flow ran, want 1", n)
	}
	putFor("flow-2")
	d.targeted(t.Context())
	if n := st.lists.Load(); n != 2 {
		t.Errorf("a new kick of the session listed it %d times in all, want 2", n)
	}
	waitFor(t, func() bool { return runs.Load() == 2 })
	close(release)
	waitFor(t, func() bool {
		return get(t, st, "flow-1").Status == store.OutboxDelivered && get(t, st, "flow-2").Status == store.OutboxDelivered
	})
}

// countedUpdates counts outbox updates.
type countedUpdates struct {
	*sqlite.Store
	updates atomic.Int32
}

func (c *countedUpdates) UpdateOutbox(ctx context.Context, id string, fn func(*store.OutboxItem) error) (*store.OutboxItem, error) {
	c.updates.Add(1)
	return c.Store.UpdateOutbox(ctx, id, fn)
}

// TestHandlerSettled: an Each item whose handler settled it itself
// (ErrSettled) gets no write of the dispatcher's; Delivered records it as
// the dispatcher would.
func TestHandlerSettled(t *testing.T) {
	c := &clock{now: t0}
	st := &countedUpdates{Store: openStore(t, c)}
	put(t, st, "flow", "a2a", t0)
	var done atomic.Bool
	each := func(ctx context.Context, it *store.OutboxItem) error {
		if _, err := st.Store.UpdateOutbox(ctx, it.ID, Delivered(c.Now)); err != nil {
			return err
		}
		return fmt.Errorf("posted: %w", ErrSettled)
	}
	d, err := New(Config{Store: st, Handlers: []Handler{{Kind: "a2a", Each: func(ctx context.Context, it *store.OutboxItem) error {
		defer done.Store(true)
		return each(ctx, it)
	}}}, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	d.Pass(t.Context())
	waitFor(t, func() bool { return done.Load() })
	if err := d.Close(); err != nil { // waits for the item's goroutine
		t.Fatal(err)
	}
	if n := st.updates.Load(); n != 0 {
		t.Errorf("the dispatcher wrote a settled item %d times, want 0", n)
	}
	if it := get(t, st, "flow"); it.Status != store.OutboxDelivered || it.Attempts != 1 || !it.DeliveredAt.Equal(t0) {
		t.Errorf("item = %+v, want delivered once at t0", it)
	}
}

// TestKickTargetedWakesOnlyForListedSessions checks that the kick every
// run's end makes wakes the loop only while some session is listed between
// full scans: a plain chat turn's end finds none and wakes nothing, and a
// session with items deferred still gets its pass.
func TestKickTargetedWakesOnlyForListedSessions(t *testing.T) {
	d := &Dispatcher{wake: make(chan struct{}, 1), targets: map[string]map[string]uint64{}}
	d.KickTargeted()
	if len(d.wake) != 0 {
		t.Fatal("KickTargeted with no session listed woke the loop")
	}
	d.targets["announce"] = map[string]uint64{} // a kind whose sessions were all untargeted
	d.KickTargeted()
	if len(d.wake) != 0 {
		t.Fatal("KickTargeted with an empty kind woke the loop")
	}
	d.KickSession("announce", "agent:main:main")
	<-d.wake // KickSession's own kick
	d.KickTargeted()
	if len(d.wake) != 1 {
		t.Fatal("KickTargeted with a listed session did not wake the loop")
	}
	<-d.wake
	d.untarget("announce", "agent:main:main", d.kicks)
	d.KickTargeted()
	if len(d.wake) != 0 {
		t.Fatal("KickTargeted woke the loop after the session was untargeted")
	}
}
