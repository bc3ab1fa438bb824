package agent

import (
	"sync"
	"time"

	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/provider"
)

// PruningConfig is tool-result pruning (agents.defaults.contextPruning
// mode "cache-ttl"): it changes what a request carries, never the
// transcript. Switchboard applies it to every provider.
type PruningConfig struct {
	Enabled bool
	// TTL is how long after a session's last model request a new pruning
	// round may start (default 5 minutes): before it, the provider's
	// prompt cache still holds the full prefix. Once a round changed the
	// request, later requests of the session are pruned the same way.
	TTL         time.Duration
	Allow, Deny []string
	HardClear   bool
	Placeholder string
}

// maxPruneStates bounds the sessions whose pruning clock is remembered.
const maxPruneStates = 4096

// pruneStates are the per-session pruning clocks.
type pruneStates struct {
	mu sync.Mutex // guards m
	m  map[string]*pruneState
}

type pruneState struct {
	last   time.Time // start of the last successful model request
	active bool      // a round changed the request: keep pruning
}

// due reports whether sessionID's next request may be pruned at now.
func (p *pruneStates) due(sessionID string, now time.Time, ttl time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.m[sessionID]
	return !ok || s.active || now.Sub(s.last) >= ttl
}

// record notes a successful request started at t, and whether pruning
// changed it.
func (p *pruneStates) record(sessionID string, t time.Time, pruned bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = make(map[string]*pruneState)
	}
	s, ok := p.m[sessionID]
	if !ok {
		if len(p.m) >= maxPruneStates {
			for k := range p.m {
				delete(p.m, k)
				break
			}
		}
		s = &pruneState{}
		p.m[sessionID] = s
	}
	s.last = t
	s.active = s.active || pruned
}

// prune applies tool-result pruning to req when it is due; it reports
// whether the request changed.
func (r *Runner) prune(sessionID string, m Model, b *budget, req *provider.Request) bool {
	pc := &r.cfg.Pruning
	if !pc.Enabled || !r.prunes.due(sessionID, r.now(), pruneTTL(pc)) {
		return false
	}
	key, cnt := modelKey(m), r.counter(m)
	out, st := compaction.Prune(req.Messages, compaction.PruneOptions{
		Window: b.window,
		Tokens: func(msgs []provider.Message) int {
			n := cnt.String(req.System)
			for i := range msgs {
				n += cnt.Message(&msgs[i])
			}
			return r.calib.Scale(key, n)
		},
		Allow: pc.Allow, Deny: pc.Deny, HardClear: pc.HardClear, Placeholder: pc.Placeholder,
	})
	if st.Trimmed+st.Cleared == 0 {
		return false
	}
	req.Messages = out
	r.log.Debug("pruned tool results", "sessionId", sessionID, "trimmed", st.Trimmed, "cleared", st.Cleared)
	return true
}

func pruneTTL(pc *PruningConfig) time.Duration {
	if pc.TTL > 0 {
		return pc.TTL
	}
	return 5 * time.Minute
}
