// Package outbox delivers the store's outbox items. One Dispatcher serves
// every kind of item (sub-agent completion announces, agent-to-agent flows):
// it lists the due items of each registered kind, hands them to the kind's
// handler and records the outcome — delivered, retried later with
// exponential backoff, or dead once the handler's attempts or time run out
// (a dead letter an operator can redeliver). Delivered items are pruned
// after the kind's retention period.
//
// Items live in the store, so nothing is lost across a restart: what was
// pending is due again when a new Dispatcher starts.
package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard/internal/safeerr"
	"github.com/switchboardhq/switchboard/internal/stackstart"
	"github.com/switchboardhq/switchboard/internal/store"
)

// ErrDefer, returned (or wrapped) by a handler for an item, leaves the item
// pending and untouched: it is offered again at the next pass. Use it for
// "not now" (the target's lane is busy), which is not a failed attempt.
var ErrDefer = errors.New("outbox: deferred")

// ErrSettled, returned (or wrapped) by an Each handler for an item, says
// that the handler recorded the item's delivery itself, in the
// transaction of its last write (with Delivered): the dispatcher records
// nothing more.
var ErrSettled = errors.New("outbox: settled by its handler")

// Delivered is the change that records an item delivered at now(), as the
// dispatcher records a nil outcome, for a handler that settles its item
// in its own last write (then returning ErrSettled). An item that is not
// pending any more is left as it is.
func Delivered(now func() time.Time) func(*store.OutboxItem) error {
	return func(x *store.OutboxItem) error {
		if x.Status == store.OutboxPending {
			x.Attempts++
			x.Status, x.DeliveredAt, x.LastError = store.OutboxDelivered, now(), ""
		}
		return nil
	}
}

// permanent marks a failure that retrying cannot fix.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent wraps err so that the item becomes dead at once instead of
// being retried (a payload that does not decode, say).
func Permanent(err error) error { return permanent{err} }

// Store is what the dispatcher needs of the store.
type Store interface {
	ListOutbox(ctx context.Context, f store.OutboxFilter) ([]*store.OutboxItem, error)
	GetOutbox(ctx context.Context, id string) (*store.OutboxItem, error)
	UpdateOutbox(ctx context.Context, id string, fn func(*store.OutboxItem) error) (*store.OutboxItem, error)
	PruneOutbox(ctx context.Context, kind string, deliveredBefore time.Time) (int64, error)
}

// Handler delivers the items of one kind. Exactly one of Batch and Each is
// set.
type Handler struct {
	Kind string
	// Batch is called from the dispatch loop with due items of Kind, due
	// order, and returns each item's outcome by ID: nil for delivered,
	// ErrDefer for not now, Permanent for dead, any other error for a
	// retry with backoff. An item missing from the map is left as is (the
	// handler settled it itself).
	Batch func(ctx context.Context, items []*store.OutboxItem) map[string]error
	// Each runs one due item in its own goroutine, owned by the
	// dispatcher, for long work (an agent-to-agent flow waits on runs). An
	// item is never run twice at once; its return value is its outcome as
	// for Batch, or ErrSettled when it recorded its delivery itself.
	Each func(ctx context.Context, item *store.OutboxItem) error
	// MaxAttempts makes an item dead after that many failed attempts; 0
	// means no limit by count.
	MaxAttempts int
	// Expiry makes an item dead when an attempt fails after it is that old;
	// 0 means no limit by age. With neither limit an item is retried
	// forever (at the maximum backoff).
	Expiry time.Duration
	// Retention deletes delivered items that old; 0 keeps them.
	Retention time.Duration
}

// Config configures a Dispatcher. Store and Handlers are required.
type Config struct {
	Store    Store
	Handlers []Handler
	// Interval is the dispatch loop's period (default 250ms); Kick runs a
	// pass at once.
	Interval time.Duration
	// FullScanInterval is how often a pass lists every due item of a kind;
	// in between it lists only the sessions passed to KickSession (default
	// 1s). Items due after a backoff are picked up by the full scans.
	FullScanInterval time.Duration
	// MinBackoff and MaxBackoff bound the retry delay, which doubles with
	// each failed attempt (defaults 1s and 60s).
	MinBackoff, MaxBackoff time.Duration
	// PruneInterval is how often delivered items are pruned (default 1h).
	PruneInterval time.Duration
	// Shared says that dispatchers of other gateway nodes work on the
	// same store: an Each item is then claimed before it runs (and the
	// claim renewed while it does), so it runs on one node at a time.
	Shared bool
	Logger *slog.Logger
	Now    func() time.Time
}

// Dispatcher runs the delivery loop. Create with New, then Start; Close
// stops it and waits for every goroutine it started.
type Dispatcher struct {
	cfg      Config
	log      *slog.Logger
	handlers map[string]*Handler
	kinds    []string // registration order

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	wake   chan struct{}

	mu       sync.Mutex
	started  bool
	closed   bool
	inFlight map[string]bool              // Each items running
	targets  map[string]map[string]uint64 // kind → sessions kicked since the last full scan → kicks' generation
	kicks    uint64                       // generation of the latest KickSession
}

// New returns a dispatcher for the handlers.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.Store == nil {
		return nil, errors.New("outbox.New: Store required")
	}
	d := &Dispatcher{cfg: cfg, handlers: map[string]*Handler{}, wake: make(chan struct{}, 1),
		inFlight: map[string]bool{}, targets: map[string]map[string]uint64{}}
	for _, h := range cfg.Handlers {
		if err := d.add(h); err != nil {
			return nil, fmt.Errorf("outbox.New: %w", err)
		}
	}
	if d.cfg.Interval <= 0 {
		d.cfg.Interval = 250 * time.Millisecond
	}
	if d.cfg.FullScanInterval <= 0 {
		d.cfg.FullScanInterval = time.Second
	}
	if d.cfg.MinBackoff <= 0 {
		d.cfg.MinBackoff = time.Second
	}
	if d.cfg.MaxBackoff <= 0 {
		d.cfg.MaxBackoff = 60 * time.Second
	}
	if d.cfg.PruneInterval <= 0 {
		d.cfg.PruneInterval = time.Hour
	}
	if d.cfg.Now == nil {
		d.cfg.Now = time.Now
	}
	d.log = cmpLogger(cfg.Logger).With("component", "outbox")
	d.ctx, d.cancel = context.WithCancel(context.Background())
	return d, nil
}

// Register adds the handler of one more kind before Start: a component
// that takes the dispatcher as a constructor argument (to kick it) hands
// in its handler after it is built.
func (d *Dispatcher) Register(h Handler) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started || d.closed {
		return fmt.Errorf("outbox.Register: handler %q after Start or Close", h.Kind)
	}
	if err := d.add(h); err != nil {
		return fmt.Errorf("outbox.Register: %w", err)
	}
	return nil
}

// add checks h and adds it to the handlers.
func (d *Dispatcher) add(h Handler) error {
	if h.Kind == "" || (h.Batch == nil) == (h.Each == nil) {
		return fmt.Errorf("handler %q needs a kind and exactly one of Batch and Each", h.Kind)
	}
	if d.handlers[h.Kind] != nil {
		return fmt.Errorf("two handlers for kind %q", h.Kind)
	}
	d.handlers[h.Kind] = &h
	d.kinds = append(d.kinds, h.Kind)
	return nil
}

func cmpLogger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// Start begins the delivery loop; the first pass lists every due item, so
// what a crash or shutdown left pending resumes. A second call is an error.
func (d *Dispatcher) Start() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return net.ErrClosed
	}
	if d.started {
		return errors.New("outbox: already started")
	}
	d.started = true
	stackstart.Go(d.wg.Go, d.loop)
	return nil
}

// Close stops the loop and waits for running Each items; their context is
// cancelled and, cut short, they stay pending for the next start. A second
// call returns net.ErrClosed.
func (d *Dispatcher) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return net.ErrClosed
	}
	d.closed = true
	d.mu.Unlock()
	d.cancel()
	d.wg.Wait()
	return nil
}

// Kick asks for a pass now.
func (d *Dispatcher) Kick() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// KickTargeted asks for a pass now if some session is listed between
// full scans (kicked, or with items deferred, and not yet listed with
// nothing due); with none listed, a pass now would list nothing, and the
// full scans come on their own. The end of every run calls it, for the
// announces deferred while their requester's lane was busy: a plain chat
// turn then wakes nothing.
func (d *Dispatcher) KickTargeted() {
	d.mu.Lock()
	listed := false
	for _, keys := range d.targets {
		if len(keys) > 0 {
			listed = true
			break
		}
	}
	d.mu.Unlock()
	if listed {
		d.Kick()
	}
}

// KickSession notes that session key has items of kind due and asks for a
// pass: the next passes list that session's items even between full scans.
func (d *Dispatcher) KickSession(kind, key string) {
	d.mu.Lock()
	if d.targets[kind] == nil {
		d.targets[kind] = map[string]uint64{}
	}
	d.kicks++
	d.targets[kind][key] = d.kicks
	d.mu.Unlock()
	d.Kick()
}

func (d *Dispatcher) loop() {
	t := time.NewTicker(d.cfg.Interval)
	defer t.Stop()
	var lastFull, lastPrune time.Time
	for {
		if time.Since(lastFull) >= d.cfg.FullScanInterval {
			d.Pass(d.ctx)
			lastFull = time.Now()
		} else {
			d.targeted(d.ctx)
		}
		if time.Since(lastPrune) >= d.cfg.PruneInterval {
			d.Prune(d.ctx)
			lastPrune = time.Now()
		}
		select {
		case <-d.ctx.Done():
			return
		case <-t.C:
		case <-d.wake:
			// A kick comes from work under way (a run's end, a stored
			// flow or announce) whose own next steps are what a client
			// waits for: its events' writes, a tool call waiting on the
			// run. Woken, the dispatcher took the processor from them
			// (a woken goroutine runs next), and a pass reads the store
			// and starts items. Let what was ready to run go first: the
			// items are background work.
			runtime.Gosched()
		}
	}
}

// Pass lists every due item of every kind once and dispatches them. It
// returns how many items were settled as delivered by Batch handlers (Each
// items finish later).
func (d *Dispatcher) Pass(ctx context.Context) int {
	n := 0
	for _, kind := range d.kinds {
		items, err := d.cfg.Store.ListOutbox(ctx, store.OutboxFilter{Kind: kind, DueBefore: d.cfg.Now()})
		if err != nil {
			if ctx.Err() == nil {
				d.log.Error("outbox: list due items failed", "kind", kind, "err", err)
			}
			continue
		}
		n += d.dispatch(ctx, d.handlers[kind], items)
	}
	return n
}

// targeted dispatches the due items of the kicked sessions only. A
// session is listed again at each pass until a listing finds nothing due
// — or, for an Each kind, until its items are running: they settle
// themselves, and listing them again at every pass while they run (a
// flow waits on runs, and every run's end wakes the dispatcher) would
// only find them running. A kick after the listing keeps the session
// listed.
func (d *Dispatcher) targeted(ctx context.Context) {
	for _, kind := range d.kinds {
		h := d.handlers[kind]
		d.mu.Lock()
		keys := make(map[string]uint64, len(d.targets[kind]))
		for k, gen := range d.targets[kind] {
			keys[k] = gen
		}
		d.mu.Unlock()
		for key, gen := range keys {
			items, err := d.cfg.Store.ListOutbox(ctx, store.OutboxFilter{Kind: kind, SessionKey: key, DueBefore: d.cfg.Now()})
			if err != nil {
				if ctx.Err() == nil {
					d.log.Error("outbox: list due items failed", "kind", kind, "session", key, "err", err)
				}
				continue
			}
			if len(items) > 0 {
				d.dispatch(ctx, h, items)
			}
			if len(items) == 0 || h.Each != nil {
				d.untarget(kind, key, gen)
			}
		}
	}
}

// untarget stops listing session key of kind between full scans, unless
// it was kicked again since generation gen.
func (d *Dispatcher) untarget(kind, key string, gen uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.targets[kind][key] == gen {
		delete(d.targets[kind], key)
	}
}

func (d *Dispatcher) dispatch(ctx context.Context, h *Handler, items []*store.OutboxItem) int {
	if len(items) == 0 || ctx.Err() != nil {
		return 0
	}
	if h.Each != nil {
		for _, it := range items {
			d.runEach(h, it)
		}
		return 0
	}
	outcomes := h.Batch(ctx, items)
	n := 0
	var settle []*store.OutboxItem
	for _, it := range items {
		err, ok := outcomes[it.ID]
		if !ok || errors.Is(err, ErrDefer) {
			continue
		}
		if err == nil {
			n++
		}
		settle = append(settle, it)
	}
	d.settleAll(h, settle, outcomes)
	return n
}

// maxSettles bounds how many outcomes of one batch are recorded at once.
const maxSettles = 16

// settleAll records the outcomes of a batch's items side by side rather
// than one after another: each is its own write, and on a store with a
// group commit (SQLite) writes handed in together share one commit. The
// dispatcher is then free for the next batch (a requester's next
// announces) one commit after the handler returned, not one per item.
func (d *Dispatcher) settleAll(h *Handler, items []*store.OutboxItem, outcomes map[string]error) {
	if len(items) == 1 {
		d.settle(h, items[0], outcomes[items[0].ID])
		return
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxSettles)
	for _, it := range items {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			d.settle(h, it, outcomes[it.ID])
		})
	}
	wg.Wait()
}

// eachClaim is how long a claim on an Each item lasts (Config.Shared); the
// dispatcher running the item renews it every third of that. A claimed
// item is not due for the other nodes' dispatchers, and the item of a node
// that died is due again when its claim runs out.
const eachClaim = 30 * time.Second

// errClaimed stops a claim on an item that is not due any more (another
// dispatcher claimed or settled it).
var errClaimed = errors.New("outbox: claimed elsewhere")

// runEach starts item's goroutine unless it is already running.
func (d *Dispatcher) runEach(h *Handler, it *store.OutboxItem) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || d.inFlight[it.ID] {
		return
	}
	d.inFlight[it.ID] = true
	d.wg.Go(func() {
		defer func() {
			d.mu.Lock()
			delete(d.inFlight, it.ID)
			d.mu.Unlock()
		}()
		shared := d.cfg.Shared
		if shared && !d.claim(it.ID, true) {
			return
		}
		if !shared && !d.stillPending(it.ID) {
			// it came from a listing taken before an earlier run of it
			// settled: delivered (or dead) since, it must not run again.
			return
		}
		ctx, stop := context.WithCancel(d.ctx)
		var renew sync.WaitGroup
		if shared {
			renew.Go(func() {
				t := time.NewTicker(eachClaim / 3)
				defer t.Stop()
				for {
					select {
					case <-ctx.Done():
						return
					case <-t.C:
						d.claim(it.ID, false)
					}
				}
			})
		}
		err := h.Each(d.ctx, it)
		stop()
		renew.Wait()
		if d.ctx.Err() != nil {
			// Shutting down: the item stays pending, due at once for the
			// next start (or another node).
			if shared {
				d.release(it.ID)
			}
			return
		}
		if shared && errors.Is(err, ErrDefer) {
			d.release(it.ID)
		}
		d.settle(h, it, err)
	})
}

// claim makes a pending item not due for eachClaim from now. The first
// claim requires it to be due (no other dispatcher holds it); a renewal
// only that it is still pending. It reports whether the claim holds.
func (d *Dispatcher) claim(id string, first bool) bool {
	now := d.cfg.Now()
	_, err := d.cfg.Store.UpdateOutbox(context.WithoutCancel(d.ctx), id, func(x *store.OutboxItem) error {
		if x.Status != store.OutboxPending || (first && x.NextAttemptAt.After(now)) {
			return errClaimed
		}
		x.NextAttemptAt = now.Add(eachClaim)
		return nil
	})
	if err != nil && !errors.Is(err, errClaimed) && !errors.Is(err, store.ErrNotFound) {
		d.log.Warn("outbox: claim failed", "id", id, "err", err)
	}
	return err == nil
}

// stillPending reports whether item id is pending in the store now (an
// error reading it counts as pending: the attempt then runs, as before).
func (d *Dispatcher) stillPending(id string) bool {
	x, err := d.cfg.Store.GetOutbox(context.WithoutCancel(d.ctx), id)
	if errors.Is(err, store.ErrNotFound) {
		return false
	}
	return err != nil || x.Status == store.OutboxPending
}

// release makes a claimed item due again at once.
func (d *Dispatcher) release(id string) {
	now := d.cfg.Now()
	d.cfg.Store.UpdateOutbox(context.WithoutCancel(d.ctx), id, func(x *store.OutboxItem) error {
		if x.Status != store.OutboxPending {
			return errClaimed
		}
		x.NextAttemptAt = now
		return nil
	})
}

// settle records an attempt's outcome.
func (d *Dispatcher) settle(h *Handler, it *store.OutboxItem, outcome error) {
	if errors.Is(outcome, ErrDefer) || errors.Is(outcome, ErrSettled) {
		return
	}
	now := d.cfg.Now()
	var perm permanent
	dead := errors.As(outcome, &perm)
	_, err := d.cfg.Store.UpdateOutbox(context.WithoutCancel(d.ctx), it.ID, func(x *store.OutboxItem) error {
		if x.Status != store.OutboxPending {
			return errAlreadySettled
		}
		x.Attempts++
		if outcome == nil {
			x.Status, x.DeliveredAt, x.LastError = store.OutboxDelivered, now, ""
			return nil
		}
		x.LastError = outcome.Error()
		if dead || (h.MaxAttempts > 0 && x.Attempts >= h.MaxAttempts) || (h.Expiry > 0 && now.Sub(x.CreatedAt) > h.Expiry) {
			x.Status = store.OutboxDead
			return nil
		}
		x.NextAttemptAt = now.Add(d.Backoff(x.Attempts))
		return nil
	})
	switch {
	case errors.Is(err, errAlreadySettled), errors.Is(err, store.ErrNotFound):
	case err != nil:
		d.log.Error("outbox: outcome not recorded", "id", it.ID, "kind", it.Kind, "err", err)
	case outcome == nil:
	case dead:
		d.log.Error("outbox: item is dead", "id", it.ID, "kind", it.Kind, "err", outcome)
	default:
		d.log.Warn("outbox: delivery failed; will retry", "id", it.ID, "kind", it.Kind, "err", outcome)
	}
}

// errAlreadySettled stops settle from touching an item another path finished.
var errAlreadySettled = errors.New("outbox: already settled")

// Backoff is the delay before the attempt after the given number of failed
// attempts: MinBackoff doubled per attempt, capped at MaxBackoff.
func (d *Dispatcher) Backoff(attempts int) time.Duration {
	b := d.cfg.MinBackoff
	for i := 1; i < attempts && b < d.cfg.MaxBackoff; i++ {
		b *= 2
	}
	return min(b, d.cfg.MaxBackoff)
}

// Prune deletes delivered items older than their kind's retention and
// returns how many it deleted.
func (d *Dispatcher) Prune(ctx context.Context) int64 {
	var total int64
	for _, kind := range d.kinds {
		h := d.handlers[kind]
		if h.Retention <= 0 {
			continue
		}
		n, err := d.cfg.Store.PruneOutbox(ctx, kind, d.cfg.Now().Add(-h.Retention))
		if err != nil {
			if ctx.Err() == nil {
				d.log.Error("outbox: prune failed", "kind", kind, "err", err)
			}
			continue
		}
		total += n
	}
	return total
}

// Redeliver puts an undelivered item of a registered kind back in the queue
// with a fresh expiry window, and kicks the loop. Its refusals are
// client-safe errors.
func (d *Dispatcher) Redeliver(ctx context.Context, id string) (*store.OutboxItem, error) {
	now := d.cfg.Now()
	it, err := d.cfg.Store.UpdateOutbox(ctx, id, func(x *store.OutboxItem) error {
		if d.handlers[x.Kind] == nil {
			return safeerr.Errorf("not an announce: %s", id)
		}
		if x.Status == store.OutboxDelivered {
			return safeerr.Errorf("already delivered: %s", id)
		}
		x.Status, x.Attempts, x.NextAttemptAt, x.CreatedAt, x.LastError = store.OutboxPending, 0, now, now, ""
		return nil
	})
	if err == nil {
		d.Kick()
	}
	return it, err
}
