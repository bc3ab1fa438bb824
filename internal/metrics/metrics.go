// Package metrics owns Switchboard's Prometheus metrics: it follows the
// runner's event stream (runs, model calls, tokens, cost, tool calls) and
// reads live gauges (lanes, connections, outbox) when scraped, and serves
// them in the Prometheus text format.
package metrics

import (
	"bufio"
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
)

// Sources are the live readings taken at each scrape; a nil func leaves
// its gauges out.
type Sources struct {
	// Lanes returns sessions with work, runs waiting, and the longest
	// queue (agent.Runner.LaneStats).
	Lanes func() (busy, queued, longest int)
	// Store times store calls (nil: no store latency metric).
	Store *StoreTimer
	// Queues returns up to n sessions with queued runs, deepest first
	// (agent.Runner.DeepestQueues).
	Queues func(n int) []agent.QueueDepth
	// Gateway returns open connections, bytes waiting to be written and
	// connections dropped as slow consumers so far.
	Gateway func() (connections int, queuedBytes, slowConsumers, eventsDropped int64)
	// Outbox counts outbox items by status ("pending", "dead").
	Outbox func(ctx context.Context) (map[string]int, error)
}

// Counters are the metrics that count from the process's start: the
// event-driven counters and histograms, and what earlier gateways of the
// process had counted of the gateway's own counters. A process that
// restarts its gateway in place (a config reload) hands the same Counters
// to each Metrics, so that no counter drops while the process start time
// stays the same. Safe for concurrent use.
type Counters struct {
	runs       *vec
	runSeconds *vec
	modelCalls *vec
	tokens     *vec
	cost       *vec
	toolCalls  *vec
	refusals   *vec

	mu                         sync.Mutex // guards the two below
	slowConsumers, eventsDrops int64      // counted by retired gateways
}

// NewCounters returns counters at zero.
func NewCounters() *Counters {
	c := &Counters{
		runs: newVec("switchboard_runs_total", "Agent runs that ended, by final status.", typeCounter, nil, "status"),
		runSeconds: newVec("switchboard_run_duration_seconds", "Run duration from start to end, by final status.",
			typeHistogram, runBuckets, "status"),
		modelCalls: newVec("switchboard_model_call_duration_seconds", "Model call latency (request to the turn's end), by model.",
			typeHistogram, modelBuckets, "model"),
		tokens: newVec("switchboard_tokens_total", "Model tokens, by agent, model and kind (input, output, cache_read, cache_write).",
			typeCounter, nil, "agent", "model", "kind"),
		cost: newVec("switchboard_cost_total", "Model cost in the configured price's currency, by agent and model.",
			typeCounter, nil, "agent", "model"),
		toolCalls: newVec("switchboard_tool_calls_total", "Tool calls, by tool and outcome (ok, error).",
			typeCounter, nil, "tool", "outcome"),
		refusals: newVec("switchboard_guardrail_refusals_total", "Calls refused by a guardrail, by kind (loop, deadlock, budget, untrusted, exec-approval).",
			typeCounter, nil, "kind"),
	}
	for _, k := range []string{"loop", "deadlock", "budget", "untrusted"} {
		c.refusals.with(k) // present at 0 from the start
	}
	return c
}

// gatewayBase returns what retired gateways counted.
func (c *Counters) gatewayBase() (slow, dropped int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slowConsumers, c.eventsDrops
}

// Metrics is the registry and the event follower. Safe for concurrent
// use.
type Metrics struct {
	fams []family // sorted by name
	*Counters
	gateway func() (int, int64, int64, int64) // Sources.Gateway

	mu    sync.Mutex               // guards calls
	calls map[string]modelCallInfo // run id → the model call in progress
}

// modelCallInfo is the model call a run has in flight.
type modelCallInfo struct {
	start        time.Time
	agent, model string
}

// Buckets of the latency histograms, in seconds: runs last from
// milliseconds (the offline model) to many minutes (tool loops).
var (
	runBuckets   = []float64{0.005, 0.025, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 180, 600}
	modelBuckets = []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
)

// New builds the metrics over src, counting on from counters (nil: new
// counters at zero).
func New(src Sources, counters *Counters) *Metrics {
	if counters == nil {
		counters = NewCounters()
	}
	m := &Metrics{Counters: counters, gateway: src.Gateway, calls: make(map[string]modelCallInfo)}
	m.fams = append([]family{m.runs, m.runSeconds, m.modelCalls, m.tokens, m.cost, m.toolCalls, m.refusals}, runtimeFamilies()...)
	if src.Lanes != nil {
		gauge := func(name, help string, pick func(busy, queued, longest int) int) {
			m.fams = append(m.fams, single(name, help, typeGauge, func() float64 {
				b, q, l := src.Lanes()
				return float64(pick(b, q, l))
			}))
		}
		gauge("switchboard_lanes_busy", "Sessions with a run in progress or queued.", func(b, _, _ int) int { return b })
		gauge("switchboard_lane_queued_runs", "Runs waiting behind another run of their session, in all.", func(_, q, _ int) int { return q })
		gauge("switchboard_lane_queue_longest", "The longest single session queue.", func(_, _, l int) int { return l })
	}
	if src.Store != nil {
		m.fams = append(m.fams, src.Store.h)
	}
	if src.Queues != nil {
		m.fams = append(m.fams, queueDepths(src.Queues))
	}
	if src.Gateway != nil {
		m.fams = append(m.fams,
			single("switchboard_connections", "Open gateway WebSocket connections.", typeGauge,
				func() float64 { c, _, _, _ := src.Gateway(); return float64(c) }),
			single("switchboard_outbound_queued_bytes", "Bytes waiting to be written to gateway connections.", typeGauge,
				func() float64 { _, b, _, _ := src.Gateway(); return float64(b) }),
			single("switchboard_slow_consumers_total", "Connections closed because they did not read their events.", typeCounter,
				func() float64 { _, _, n, _ := src.Gateway(); b, _ := m.gatewayBase(); return float64(b + n) }),
			single("switchboard_events_dropped_total", "Event frames never delivered to a connection (skipped while it was backed up, or queued when it was closed as a slow consumer).", typeCounter,
				func() float64 { _, _, _, n := src.Gateway(); _, b := m.gatewayBase(); return float64(b + n) }))
	}
	if src.Outbox != nil {
		m.fams = append(m.fams, outboxItems(src.Outbox))
	}
	slices.SortFunc(m.fams, func(a, b family) int { return strings.Compare(a.metricName(), b.metricName()) })
	return m
}

// Retire adds what this gateway counted of its own counters (slow
// consumers, dropped events) to the shared Counters, for the next Metrics
// over them. Call it once, when the gateway has closed.
func (m *Metrics) Retire() {
	if m.gateway == nil {
		return
	}
	_, _, slow, dropped := m.gateway()
	m.Counters.mu.Lock()
	defer m.Counters.mu.Unlock()
	m.slowConsumers += slow
	m.eventsDrops += dropped
}

// Handler serves the metrics in the Prometheus text format. A source
// that fails leaves its family out of that scrape; the rest is served.
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		bw := bufio.NewWriter(w)
		for _, f := range m.fams {
			f.write(bw)
		}
		bw.Flush()
	})
}

// Events is where the metrics hear of runs: the events of the runs
// executing on this node (*agent.Runner; a run on another node is counted
// there).
type Events interface {
	SubscribeLocal(fn func(agent.Event)) (unsubscribe func())
}

// Follow counts the runs of ev's node until stop is called.
func (m *Metrics) Follow(ev Events) (stop func()) { return ev.SubscribeLocal(m.Observe) }

// Observe follows one runner event; it never blocks (agent.Runner calls
// it on its own goroutines).
func (m *Metrics) Observe(ev agent.Event) {
	if ev.IsRemote() {
		return // counted by the node that ran the run
	}
	switch {
	case ev.Stream == agent.StreamLifecycle && ev.Phase == agent.PhaseModel:
		m.mu.Lock()
		m.calls[ev.RunID] = modelCallInfo{start: ev.Time, agent: ev.AgentID, model: ev.ProviderID + "/" + ev.ModelID}
		m.mu.Unlock()
	case ev.Stream == agent.StreamUsage && ev.Usage != nil:
		m.mu.Lock()
		call, ok := m.calls[ev.RunID]
		delete(m.calls, ev.RunID)
		m.mu.Unlock()
		if !ok {
			return
		}
		if !call.start.IsZero() && !ev.Time.IsZero() {
			m.modelCalls.with(call.model).observe(m.modelCalls.buckets, ev.Time.Sub(call.start).Seconds())
		}
		u := ev.Usage
		for kind, n := range map[string]int64{"input": u.Input, "output": u.Output, "cache_read": u.CacheRead, "cache_write": u.CacheWrite} {
			if n > 0 {
				m.tokens.with(call.agent, call.model, kind).add(float64(n))
			}
		}
		if u.Cost != nil && u.Cost.Total > 0 {
			m.cost.with(call.agent, call.model).add(u.Cost.Total)
		}
	case ev.Stream == agent.StreamTool && ev.Phase == agent.PhaseResult && ev.Tool != nil:
		outcome := "ok"
		if ev.Tool.Result == nil || ev.Tool.Result.IsError {
			outcome = "error"
		}
		m.toolCalls.with(ev.Tool.Name, outcome).add(1)
	case ev.Stream == agent.StreamLifecycle && ev.Phase == agent.PhaseEnd && ev.Run != nil:
		m.mu.Lock()
		delete(m.calls, ev.RunID)
		m.mu.Unlock()
		status := string(ev.Run.Status)
		m.runs.with(status).add(1)
		if ev.Run.StopReason == agent.StopBudget {
			m.refusals.with("budget").add(1) // ended by its tree's budget
		}
		if !ev.Run.StartedAt.IsZero() && !ev.Run.EndedAt.IsZero() {
			m.runSeconds.with(status).observe(m.runSeconds.buckets, ev.Run.EndedAt.Sub(ev.Run.StartedAt).Seconds())
		}
	}
}

// outboxItems reads outbox counts at scrape time.
func outboxItems(count func(context.Context) (map[string]int, error)) funcFamily {
	return funcFamily{name: "switchboard_outbox_items", help: "Outbox items (announces, agent-to-agent steps) by status.",
		typ: typeGauge, labels: []string{"status"}, read: func() ([]sample, bool) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			counts, err := count(ctx)
			if err != nil {
				return nil, false
			}
			out := make([]sample, 0, len(counts))
			for status, n := range counts {
				out = append(out, sample{values: []string{status}, v: float64(n)})
			}
			return out, true
		}}
}

// Refused counts one call a guardrail refused.
func (m *Metrics) Refused(kind string) { m.refusals.with(kind).add(1) }

// MaxQueueSeries bounds the per-session queue depth series of one scrape:
// the deepest queues are the ones worth seeing, and a session label on
// every session would grow without bound.
const MaxQueueSeries = 20

// queueDepths reads switchboard_session_queue_depth at each scrape.
func queueDepths(read func(n int) []agent.QueueDepth) funcFamily {
	return funcFamily{name: "switchboard_session_queue_depth",
		help: "Runs waiting behind the active run, for the sessions with the deepest queues (at most 20).",
		typ:  typeGauge, labels: []string{"session"}, read: func() ([]sample, bool) {
			var out []sample
			for _, d := range read(MaxQueueSeries) {
				out = append(out, sample{values: []string{d.SessionKey}, v: float64(d.Queued)})
			}
			return out, true
		}}
}

// StoreTimer times store calls by operation, for /metrics (pass it in
// Sources.Store). Safe for concurrent use.
type StoreTimer struct{ h *vec }

// NewStoreTimer returns an empty timer.
func NewStoreTimer() *StoreTimer {
	return &StoreTimer{h: newVec("switchboard_store_operation_seconds", "Latency of store calls on the hot paths of a turn, by operation.",
		typeHistogram, []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2}, "op")}
}

// Observe records one call of op that took d.
func (t *StoreTimer) Observe(op string, d time.Duration) {
	t.h.with(op).observe(t.h.buckets, d.Seconds())
}
