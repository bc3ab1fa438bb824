package compaction

import "time"

// Reset modes of session.reset.
const (
	ResetNone  = "none"
	ResetDaily = "daily"
	ResetIdle  = "idle"
)

// ResetRule is the effective automatic reset of one session
// (session.reset, resetByType, resetByChannel).
type ResetRule struct {
	Mode string
	// AtHour is the local hour (0-23) of the daily reset.
	AtHour int
	// IdleMinutes ends a session after that long without activity; with
	// mode daily it applies too, and whichever expires first wins.
	IdleMinutes int
}

// Stale reports whether a session whose current transcript started at
// started and was last active at active must start afresh at now, and
// why ("daily" or "idle"). The daily boundary is the latest AtHour:00 in
// now's location at or before now.
func (r ResetRule) Stale(started, active, now time.Time) (reason string, stale bool) {
	if r.Mode == ResetDaily && !started.IsZero() {
		h := min(max(r.AtHour, 0), 23)
		boundary := time.Date(now.Year(), now.Month(), now.Day(), h, 0, 0, 0, now.Location())
		if boundary.After(now) {
			boundary = boundary.AddDate(0, 0, -1)
		}
		if started.Before(boundary) {
			return ResetDaily, true
		}
	}
	if (r.Mode == ResetIdle || r.Mode == ResetDaily) && r.IdleMinutes > 0 && !active.IsZero() &&
		now.Sub(active) > time.Duration(r.IdleMinutes)*time.Minute {
		return ResetIdle, true
	}
	return "", false
}
