package metrics

import (
	"context"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/store"
)

// maxOutboxCount bounds how many items of one status a scrape counts.
const maxOutboxCount = 100000

// Runner is what the gateway's metrics read of the runner (agent.Runner):
// its lanes and queues, and its events.
type Runner interface {
	LaneStats() (busy, queued, longest int)
	DeepestQueues(n int) []agent.QueueDepth
	Events
}

// OutboxLister lists outbox items (store.Store).
type OutboxLister interface {
	ListOutbox(ctx context.Context, f store.OutboxFilter) ([]*store.OutboxItem, error)
}

// Start builds the /metrics registry over the runner's events and the
// gateway's (see Sources.Gateway) and store's live state, counting on
// from counters (nil: from zero); stop ends the event subscription.
func Start(runner Runner, gateway func() (int, int64, int64, int64), st OutboxLister, timer *StoreTimer,
	counters *Counters) (m *Metrics, stop func()) {
	m = New(Sources{
		Store:   timer,
		Lanes:   runner.LaneStats,
		Queues:  runner.DeepestQueues,
		Gateway: gateway,
		Outbox: func(ctx context.Context) (map[string]int, error) {
			out := make(map[string]int, 2)
			for _, status := range []store.OutboxStatus{store.OutboxPending, store.OutboxDead} {
				items, err := st.ListOutbox(ctx, store.OutboxFilter{Statuses: []store.OutboxStatus{status}, Limit: maxOutboxCount})
				if err != nil {
					return nil, err
				}
				out[string(status)] = len(items)
			}
			return out, nil
		},
	}, counters)
	return m, m.Follow(runner)
}
