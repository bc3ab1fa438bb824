package store

import "context"

// RunClaims are claims on outbox items to make in the transaction that
// stores a run, carried by the context of the run's admission
// (WithRunClaims): a batch of sub-agent announces is then claimed for the
// run that carries it in the commit that stores that run, not in a commit
// of its own before it, and a crash finds the run and its claims together
// or neither. A store that can (a RunClaimer: SQLite's OpenRun and
// CreateRun) applies each claim after inserting the run, in order, as
// UpdateOutbox applies its fn; an error from any refuses the run (nothing
// is written) and is returned, wrapped. It marks the claims stored once
// the transaction committed. A store that cannot ignores them, so a
// caller hands them over only to a store that ClaimsWithRuns.
type RunClaims struct {
	// RunID is the run whose transaction carries the claims.
	RunID string
	// Claims are the claims, applied in order (an error refuses the run).
	Claims []OutboxChange

	carried
}

type runClaimsKey struct{}

// WithRunClaims returns ctx carrying c, for the admission of c.RunID.
func WithRunClaims(ctx context.Context, c *RunClaims) context.Context {
	return context.WithValue(ctx, runClaimsKey{}, c)
}

// RunClaimsOf returns the RunClaims ctx carries for run runID, nil when
// none (or when they are stored already).
func RunClaimsOf(ctx context.Context, runID string) *RunClaims {
	c, _ := ctx.Value(runClaimsKey{}).(*RunClaims)
	if c == nil || len(c.Claims) == 0 || c.RunID != runID || c.Stored() {
		return nil
	}
	return c
}

// RunClaimer is a Store that makes the claims a run's admission carries
// (RunClaims) in the transaction that stores the run, whichever way its
// runs are stored.
type RunClaimer interface {
	// ClaimsWithRuns reports whether it does (a wrapper reports what the
	// store it wraps does).
	ClaimsWithRuns() bool
}

// ClaimsWithRuns reports whether st makes a run's claims with the run
// (RunClaimer).
func ClaimsWithRuns(st any) bool {
	c, ok := st.(RunClaimer)
	return ok && c.ClaimsWithRuns()
}
