package sqlite

import (
	"maps"

	"github.com/switchboardhq/switchboard/internal/store"
)

// maxMemo bounds each of writeMemo's maps.
const maxMemo = 4096

// writeMemo is what the writer remembers of the rows it wrote, so that a
// warm turn reads nothing it read or wrote before: each transcript's tail
// (its last seq and entry id, which an append chains on) and each run
// OpenRun stored and not yet ended (its row and the counts of the messages
// stored with its id since, which its end stores). One gateway owns the
// database file (the state dir's lock), and every write runs on the
// committer's goroutine, which alone uses the memo: no lock.
//
// The memo follows the transaction: what a body sets is undone when the
// body is rolled back to its savepoint or the transaction is not
// committed. Forgetting is always safe (the writer then reads the row), so
// only sets are undone. A run is remembered only from the transaction that
// inserted it, so its counts cover every message stored with its id; a run
// forgotten (UpdateRun, AbortInterrupted, the bound) is not remembered
// again, and its end counts its messages by reading them.
type writeMemo struct {
	tails map[string]tail     // by transcript (session id)
	runs  map[string]*liveRun // by run id
	undo  []undoSet           // the transaction's sets, oldest first
	mark  int                 // len(undo) when the running body began
}

// tail is a transcript's last seq (0 when empty) and entry id.
type tail struct {
	seq int64
	id  string
}

// liveRun is a run as stored by OpenRun and the counts of the messages
// stored since with its id in its transcript.
type liveRun struct {
	run   store.Run
	stats store.RunStats
}

// undoSet restores one entry of the memo as it was before a set.
type undoSet struct {
	run  bool // runs, else tails
	key  string
	had  bool
	tail tail
	live *liveRun
}

// bodyBegins marks where the undo of the body about to run starts.
func (m *writeMemo) bodyBegins() { m.mark = len(m.undo) }

// bodyDone keeps the body's sets in the transaction (ok) or undoes them
// (the body was rolled back to its savepoint).
func (m *writeMemo) bodyDone(ok bool) {
	if !ok {
		m.rollback(m.mark)
	}
	m.mark = len(m.undo)
}

// txDone forgets the undo of a committed transaction, or undoes every set
// of one rolled back.
func (m *writeMemo) txDone(committed bool) {
	if !committed {
		m.rollback(0)
	}
	clear(m.undo)
	m.undo, m.mark = m.undo[:0], 0
}

// rollback undoes the sets from undo[from:], newest first.
func (m *writeMemo) rollback(from int) {
	for i := len(m.undo) - 1; i >= from; i-- {
		u := m.undo[i]
		switch {
		case u.run && u.had:
			m.runs[u.key] = u.live
		case u.run:
			delete(m.runs, u.key)
		case u.had:
			m.tails[u.key] = u.tail
		default:
			delete(m.tails, u.key)
		}
	}
	clear(m.undo[from:])
	m.undo = m.undo[:from]
}

// tailOf returns the remembered tail of transcript sid.
func (m *writeMemo) tailOf(sid string) (tail, bool) {
	t, ok := m.tails[sid]
	return t, ok
}

// setTail remembers t as transcript sid's tail.
func (m *writeMemo) setTail(sid string, t tail) {
	old, had := m.tails[sid]
	if !had && len(m.tails) >= maxMemo {
		for k := range m.tails { // forget an arbitrary one
			delete(m.tails, k)
			break
		}
	}
	if m.tails == nil {
		m.tails = make(map[string]tail)
	}
	m.undo = append(m.undo, undoSet{key: sid, had: had, tail: old})
	m.tails[sid] = t
}

// forgetTail forgets transcript sid's tail.
func (m *writeMemo) forgetTail(sid string) { delete(m.tails, sid) }

// forgetTranscript forgets transcript sid, deleted: its tail and the runs
// whose messages it held, whose counts would still have those messages.
func (m *writeMemo) forgetTranscript(sid string) {
	m.forgetTail(sid)
	for id, lr := range m.runs {
		if lr.run.SessionID == sid {
			delete(m.runs, id)
		}
	}
}

// run returns the remembered run runID; the caller must not change it.
func (m *writeMemo) run(runID string) (*liveRun, bool) {
	lr, ok := m.runs[runID]
	return lr, ok
}

// openRun remembers r, just inserted, with no messages yet.
func (m *writeMemo) openRun(r *store.Run) {
	if len(m.runs) >= maxMemo {
		return // its end reads its messages
	}
	m.setRun(r.RunID, &liveRun{run: *r})
}

// setRun replaces runID's entry with lr.
func (m *writeMemo) setRun(runID string, lr *liveRun) {
	old, had := m.runs[runID]
	if m.runs == nil {
		m.runs = make(map[string]*liveRun)
	}
	m.undo = append(m.undo, undoSet{run: true, key: runID, had: had, live: old})
	m.runs[runID] = lr
}

// countMessage adds a message stored in transcript sid to the counts of
// its run, when that run is remembered with sid. line is the stored line.
func (m *writeMemo) countMessage(sid string, msg *store.Message, line string) {
	lr, ok := m.runs[msg.RunID]
	if !ok || lr.run.SessionID != sid {
		return
	}
	next := &liveRun{run: lr.run, stats: lr.stats}
	next.stats.Tools = maps.Clone(lr.stats.Tools)
	next.stats.CountLine(msg.Role, line)
	m.setRun(msg.RunID, next)
}

// forgetRun forgets runID (every run when runID is empty).
func (m *writeMemo) forgetRun(runID string) {
	if runID == "" {
		clear(m.runs)
		return
	}
	delete(m.runs, runID)
}
