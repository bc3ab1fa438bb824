package agent

import (
	"sync"
	"time"
)

// maxDurationSessions bounds the sessions runDurations remembers; past
// it, the oldest half is forgotten (those fall back to the global figure).
const maxDurationSessions = 10000

// runDurations keeps a moving average of how long runs take, per session
// and over all sessions, to tell a sender how long a queued message will
// wait.
type runDurations struct {
	mu     sync.Mutex
	global time.Duration
	per    map[string]durationEntry
	clock  uint64 // counts observations, to age entries
}

type durationEntry struct {
	avg  time.Duration
	seen uint64
}

// ewma weights a new observation against the average so far (1/4).
func ewma(avg, d time.Duration) time.Duration {
	if avg == 0 {
		return d
	}
	return avg + (d-avg)/4
}

func (rd *runDurations) observe(sessionKey string, d time.Duration) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	rd.clock++
	rd.global = ewma(rd.global, d)
	if rd.per == nil {
		rd.per = map[string]durationEntry{}
	}
	if _, ok := rd.per[sessionKey]; !ok && len(rd.per) >= maxDurationSessions {
		cut := rd.clock - uint64(maxDurationSessions)/2
		for k, e := range rd.per {
			if e.seen < cut {
				delete(rd.per, k)
			}
		}
	}
	e := rd.per[sessionKey]
	rd.per[sessionKey] = durationEntry{avg: ewma(e.avg, d), seen: rd.clock}
}

// typical returns how long a run of sessionKey usually takes (0 when no
// run has ended since the gateway started).
func (rd *runDurations) typical(sessionKey string) time.Duration {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if e, ok := rd.per[sessionKey]; ok {
		return e.avg
	}
	return rd.global
}

// ExpectedWait estimates how long a message queued at position (runs
// ahead of it, the active one included) waits on sessionKey before its run
// starts, from how long that session's runs (or, failing that, any runs)
// have taken. 0 when there is nothing to go on.
func (r *Runner) ExpectedWait(sessionKey string, position int) time.Duration {
	if position <= 0 {
		return 0
	}
	return time.Duration(position) * r.durations.typical(sessionKey)
}
