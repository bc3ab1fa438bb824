package agent

import (
	"bytes"
	"sync"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// toolDefs keeps the definitions made for the last run's tools: a run
// mostly has the tools the run before it had, whose definitions (the same
// names, descriptions and schemas) are then shared instead of made again.
// A definitions slice is not written once made: a run's client tools are
// appended past its length, which is its capacity, so into a new array.
type toolDefs struct {
	mu   sync.Mutex
	last []provider.ToolDef
}

// of returns the definitions of set's tools in its order, with room for
// extra more (the run's client tools), or nil when there are none. Only
// definitions without room for more are kept and shared.
func (d *toolDefs) of(set *tools.Set, extra int) []provider.ToolDef {
	n := set.Len()
	if n+extra == 0 {
		return nil // as before: a run without tools has nil definitions
	}
	if extra == 0 {
		d.mu.Lock()
		last := d.last
		d.mu.Unlock()
		if sameDefs(last, set) {
			return last
		}
	}
	defs := make([]provider.ToolDef, 0, n+extra)
	for t := range set.Each() {
		defs = append(defs, provider.ToolDef{Name: t.Name(), Description: t.Description(), Parameters: t.Schema()})
	}
	if extra == 0 {
		d.mu.Lock()
		d.last = defs
		d.mu.Unlock()
	}
	return defs
}

// sameDefs reports whether defs are the definitions of set's tools.
func sameDefs(defs []provider.ToolDef, set *tools.Set) bool {
	if len(defs) != set.Len() {
		return false
	}
	i := 0
	for t := range set.Each() {
		d := &defs[i]
		schema := t.Schema()
		if t.Name() != d.Name || t.Description() != d.Description ||
			(schema == nil) != (d.Parameters == nil) || !bytes.Equal(schema, d.Parameters) {
			return false
		}
		i++
	}
	return true
}
