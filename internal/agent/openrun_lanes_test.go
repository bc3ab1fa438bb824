package agent

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
)

// heldTestLanes is testLanes whose node holds the lanes from an earlier
// turn when held is set (ClaimHeld), and which reports each Release.
type heldTestLanes struct {
	testLanes
	held     atomic.Bool
	claims   atomic.Int64 // ClaimHeld calls that took the lane
	released chan string
}

func (l *heldTestLanes) ClaimHeld(key string) (store.Fence, bool) {
	if !l.held.Load() {
		return store.Fence{}, false
	}
	l.claims.Add(1)
	return store.Fence{Node: "n", SessionKey: key, Epoch: 1}, true
}

func (l *heldTestLanes) Release(ctx context.Context, key string) (bool, error) {
	l.released <- key
	return false, nil
}

// fencedOpenStore is the runner's store, recording the fence of each
// OpenRun and refusing it as fenced (writing nothing) when moved is set,
// as a store shared by nodes does once the lane's claim moved.
type fencedOpenStore struct {
	Store
	moved   atomic.Bool
	mu      sync.Mutex
	fences  []store.Fence // of each OpenRun
	creates atomic.Int64
}

func (s *fencedOpenStore) OpenRun(ctx context.Context, r *store.Run, msgs []store.Message) (*store.Run, []store.Message, error) {
	f, _ := store.FenceOf(ctx)
	s.mu.Lock()
	s.fences = append(s.fences, f)
	s.mu.Unlock()
	if s.moved.Load() {
		return nil, nil, store.ErrFenced
	}
	return store.OpenRun(ctx, s.Store, r, msgs)
}

func (s *fencedOpenStore) CreateRun(ctx context.Context, r *store.Run) error {
	s.creates.Add(1)
	return s.Store.CreateRun(ctx, r)
}

// TestOpenRunUnderHeldClaim: with Lanes, a turn on a lane this node holds
// already opens its run in one store call carrying the claim's fence, and
// the lane is given up again after the run; a lane this node does not
// hold, or an open the store refuses as fenced, queues the run instead
// (nothing of the refused open is kept), which then runs as a queued run.
func TestOpenRunUnderHeldClaim(t *testing.T) {
	for _, tt := range []struct {
		name         string
		held, moved  bool
		opens, creat int64
	}{
		{"held: opened under the fence", true, false, 1, 0},
		{"held, claim moved: queued", true, true, 1, 1},
		{"not held: queued", false, false, 0, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lanes := &heldTestLanes{released: make(chan string, 4)}
			lanes.held.Store(tt.held)
			var st *fencedOpenStore
			h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
				return textReply("hi"), nil
			}, func(c *Config) {
				st = &fencedOpenStore{Store: c.Store}
				st.moved.Store(tt.moved)
				c.Store, c.Lanes = st, lanes
			})
			const key = "agent:main:main"
			run := h.wait(h.submit(Input{SessionKey: key, Message: "go"}).RunID)
			if run.Status != store.RunOK {
				t.Fatalf("run = %s %q, want ok", run.Status, run.Error)
			}
			st.mu.Lock()
			fences := st.fences
			st.mu.Unlock()
			if int64(len(fences)) != tt.opens || st.creates.Load() != tt.creat {
				t.Fatalf("OpenRun calls %d, CreateRun calls %d; want %d, %d", len(fences), st.creates.Load(), tt.opens, tt.creat)
			}
			for _, f := range fences {
				if f != (store.Fence{Node: "n", SessionKey: key, Epoch: 1}) {
					t.Errorf("OpenRun carried fence %+v, want the held claim's", f)
				}
			}
			n, err := h.store.CountMessages(context.Background(), run.SessionID)
			if err != nil || n != 2 {
				t.Errorf("transcript = %d messages (%v), want the input and the reply once", n, err)
			}
			// A claim ClaimHeld took is given up once the lane is idle.
			if lanes.claims.Load() > 0 {
				select {
				case k := <-lanes.released:
					if k != key {
						t.Errorf("released %q, want %q", k, key)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the lane ClaimHeld took was never released")
				}
			}
		})
	}
}
