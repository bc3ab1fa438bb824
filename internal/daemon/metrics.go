package daemon

import (
	"context"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/gateway"
	"github.com/switchboardhq/switchboard/internal/metrics"
	"github.com/switchboardhq/switchboard/internal/store"
)

// maxOutboxCount bounds how many items of one status a scrape counts.
const maxOutboxCount = 100000

// newMetrics builds the /metrics registry over the runner's events and
// the gateway's and store's live state, counting on from counters (nil:
// from zero); stop ends the event subscription.
func newMetrics(runner *agent.Runner, gw *gateway.Server, st store.Store, timer *metrics.StoreTimer,
	counters *metrics.Counters) (m *metrics.Metrics, stop func()) {
	m = metrics.New(metrics.Sources{
		Store:  timer,
		Lanes:  runner.LaneStats,
		Queues: runner.DeepestQueues,
		Gateway: func() (int, int64, int64, int64) {
			s := gw.Stats()
			return s.Connections, s.QueuedBytes, s.SlowConsumers, s.EventsDropped
		},
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
