package agent

import (
	"encoding/json"
	"sync"

	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/spend"
	"github.com/switchboardhq/switchboard/internal/store"
)

// extraMemo keeps what decode made of each session extra it was asked
// about, keyed by the extra's content: a run reads its session's settings
// (the budget, the elevated level) from extra on every turn, and a warm
// session's extra rarely changes. A patched session has other content, so
// it is decoded again on its next run. It is safe for concurrent use.
type extraMemo[T any] struct {
	decode func(extra json.RawMessage) T
	mu     sync.Mutex
	byText map[string]T
}

// maxExtraMemo bounds extraMemo.byText (each entry holds a copy of its
// extra); past it the memo starts over.
const maxExtraMemo = 256

// get returns decode(extra), from the memo when extra was seen before.
func (m *extraMemo[T]) get(extra json.RawMessage) T {
	if len(extra) == 0 {
		return m.decode(extra)
	}
	m.mu.Lock()
	v, ok := m.byText[string(extra)]
	m.mu.Unlock()
	if ok {
		return v
	}
	v = m.decode(extra)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byText == nil || len(m.byText) >= maxExtraMemo {
		m.byText = map[string]T{}
	}
	m.byText[string(extra)] = v
	return v
}

// extraLimits is spend.FromExtra, memoised (limitsOf, every run).
var extraLimits = extraMemo[spend.Limits]{decode: spend.FromExtra}

// extraElevated is SessionElevatedLevel's decoding, memoised (the run's
// tool set asks for it every run).
var extraElevated = extraMemo[string]{decode: func(extra json.RawMessage) string {
	var x struct {
		ElevatedLevel string `json:"elevatedLevel"`
	}
	if len(extra) == 0 || json.Unmarshal(extra, &x) != nil {
		return ""
	}
	l, _ := policy.NormalizeElevatedLevel(x.ElevatedLevel)
	return l
}}

// sessionExtra returns sess's extra, nil for a nil sess.
func sessionExtra(sess *store.Session) json.RawMessage {
	if sess == nil {
		return nil
	}
	return sess.Extra
}
