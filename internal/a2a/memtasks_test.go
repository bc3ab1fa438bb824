package a2a

import (
	"context"
	"sort"
	"sync"

	"github.com/switchboardhq/switchboard/internal/a2a/wire"
)

// MemTasks is a Tasks store in memory for the unit tests (the daemon keeps
// tasks in the durable store), keyed by peer so one peer never reads
// another's task.
type MemTasks struct {
	mu sync.Mutex
	m  map[[2]string]wire.Task
}

// NewMemTasks returns an empty store.
func NewMemTasks() *MemTasks { return &MemTasks{m: map[[2]string]wire.Task{}} }

// Put stores t for peer, replacing an older copy.
func (m *MemTasks) Put(_ context.Context, peer string, t wire.Task) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m[[2]string{peer, t.ID}] = t
	return nil
}

// Get returns peer's task id, or nil.
func (m *MemTasks) Get(_ context.Context, peer, id string) (*wire.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.m[[2]string{peer, id}]
	if !ok {
		return nil, nil
	}
	return &t, nil
}

// List returns peer's tasks (of contextID when set), newest status first.
func (m *MemTasks) List(_ context.Context, peer, contextID string, limit int) ([]wire.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []wire.Task
	for k, t := range m.m {
		if k[0] == peer && (contextID == "" || t.ContextID == contextID) {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Status.Timestamp > out[j].Status.Timestamp })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Open returns the tasks not yet terminal.
func (m *MemTasks) Open(context.Context) ([]PeerTask, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []PeerTask
	for k, t := range m.m {
		if !wire.Terminal(t.Status.State) {
			out = append(out, PeerTask{Peer: k[0], Task: t})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Task.ID < out[j].Task.ID })
	return out, nil
}
