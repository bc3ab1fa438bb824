package gateway

import (
	"context"
	"fmt"
	"sync"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/store"
)

// labels keeps a session label unique within an agent's sessions, as the
// reference does within an agent's session store: sessions.patch,
// sessions.create and /name refuse a label another session of the agent
// has, so that a label names one session for sessions.resolve and
// sessions_send. (sessions_spawn labels its child sessions at the spawn,
// unchecked: several children of one task often share a label, and the
// reference sets it with a patch in the announce flow's last step.)
type labels struct {
	// mu is held from a label's check to the write that sets it, so that
	// two renames on this gateway cannot both take one label. Two
	// gateways sharing a store can, in the instant between the check and
	// the write: the store has no unique index on labels (databases made
	// before this check may hold duplicates, which sessions.resolve
	// reports as it did).
	mu sync.Mutex
}

// claimLabel locks s.labels for setting label on session key, and
// returns the unlock; or, when another session of key's agent (agentID for
// a key that names none, such as "global") has the label, the reference's
// error, with nothing locked. An empty label (one removed) is always free.
func (s *Server) claimLabel(ctx context.Context, key, agentID, label string) (unlock func(), err error) {
	if label == "" {
		return func() {}, nil
	}
	s.labels.mu.Lock()
	owners, err := s.cfg.Store.ListSessions(ctx, store.ListOptions{Label: label, AgentID: agentOfKey(key, agentID)})
	if err != nil {
		s.labels.mu.Unlock()
		return nil, fmt.Errorf("gateway: label owners: %w", err)
	}
	for _, o := range owners {
		if o.Key != key && o.Label == label {
			s.labels.mu.Unlock()
			return nil, errLabelInUse(label)
		}
	}
	return s.labels.mu.Unlock, nil
}

// errLabelInUse is the reference's refusal of a label another session
// has.
func errLabelInUse(label string) *wire.Error {
	return invalid("label already in use: " + label)
}
