package sessions

import (
	"strings"
	"sync"
)

// waitGraph records which sessions are blocked waiting on which: an edge
// from → to exists while a run of from is inside a sessions_send that
// waits for to's reply. A wait that would close a cycle can never end
// before its timeout (each session's lane runs one run at a time, and
// every session on the cycle is blocked in its own wait), so it is refused
// up front. Safe for concurrent use.
type waitGraph struct {
	mu    sync.Mutex
	edges map[string]map[string]int // from → to → waits in progress
}

// acquire adds the edge from → to and returns its release, or, when to
// already waits (directly or through others) on from, the cycle the wait
// would close, as session keys from → to → … → from, and no edge.
func (g *waitGraph) acquire(from, to string) (release func(), cycle []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if path := g.pathLocked(to, from); path != nil {
		return nil, append([]string{from}, path...)
	}
	if g.edges == nil {
		g.edges = map[string]map[string]int{}
	}
	if g.edges[from] == nil {
		g.edges[from] = map[string]int{}
	}
	g.edges[from][to]++
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.edges[from][to]--; g.edges[from][to] <= 0 {
				delete(g.edges[from], to)
				if len(g.edges[from]) == 0 {
					delete(g.edges, from)
				}
			}
		})
	}, nil
}

// pathLocked returns a path of waits from → … → to (both included), or nil
// when there is none. from == to is the empty wait: a path of one.
func (g *waitGraph) pathLocked(from, to string) []string {
	if from == to {
		return []string{to}
	}
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for next := range g.edges[cur] {
			if _, seen := prev[next]; seen {
				continue
			}
			prev[next] = cur
			if next == to {
				var path []string
				for at := to; at != ""; at = prev[at] {
					path = append(path, at)
				}
				for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
					path[i], path[j] = path[j], path[i]
				}
				return path
			}
			queue = append(queue, next)
		}
	}
	return nil
}

// deadlockError is the tool error of a refused wait.
func deadlockError(cycle []string) string {
	return "Deadlock: " + cycle[1] + " is already waiting for this session (" + strings.Join(cycle, " → ") +
		"), so waiting for its reply could only time out. Send with timeoutSeconds: 0 instead; its reply will be announced here."
}
