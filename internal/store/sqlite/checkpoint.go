package sqlite

import (
	"context"
	"database/sql"
	"sync/atomic"
	"time"

	"github.com/switchboardhq/switchboard/internal/store/sqlite/walvfs"
)

// checkpointEvery is how many committed write bodies pass between two
// checkpoints by default: a warm chat turn is two bodies of about nine
// 1 KiB pages each, so this is about 3,700 WAL pages (4 MiB; 12 MiB with
// the 4 KiB pages of databases created before the twentieth round), where
// it was 110 bodies (SQLite's default of 1,000 pages) through the
// eighteenth round. Under a steady stream of turns each checkpoint's two
// fsyncs and copies came every 55 turns, and the turns that met one were
// the p99 of a one-client run (2.1 ms; 1.6 ms with this): the same hot
// pages (the transcript's and the runs' last leaves, the session's row)
// are copied once for 200 turns instead of once for 55. Twice as many
// bodies took 1-4 µs more off a warm turn (BenchmarkWarmTurn), not worth
// a WAL twice as long.
const checkpointEvery = 400

// checkpointAfter bounds how long a committed body waits for its
// checkpoint when fewer than checkpointEvery bodies follow it. With
// synchronous=NORMAL only a checkpoint fsyncs the WAL; until then a commit
// is on the disk only once the kernel writes the WAL's pages back (about
// 30 s later), so a power failure could take a quiet gateway's last
// half-minute of turns. With this bound it takes about a second's.
const checkpointAfter = time.Second

// checkpointer copies the WAL back into the database file on its own
// connection and goroutine, so that the writer (which runs with
// wal_autocheckpoint off) does not, but for finish's rare remainder. A
// checkpoint's two fsyncs took the writer about 18 ms once every 55 turns,
// during which no commit, and so no chat.send acknowledgement or final,
// could happen; now commits go on beside it. The checkpoints are PASSIVE:
// they copy what no reader still needs and never wait for a lock.
// Each checkpoint fsyncs the WAL: it comes checkpointEvery bodies or
// checkpointAfter after the first body since the last, whichever is first.
type checkpointer struct {
	db     *sql.DB       // one connection, used by loop only
	kick   chan struct{} // capacity 1: a checkpoint is due
	stop   chan struct{}
	done   chan struct{}
	every  int64        // bodies between checkpoints; < 0 never (tests)
	bodies atomic.Int64 // committed bodies since the last kick
	// after is checkpointAfter (tests: < 0 never). pending says a body
	// that wrote to the WAL was committed since loop last began a
	// checkpoint; the first such body sends on first, which starts loop's
	// timer. lastWrites is walvfs.Writes() after the last batch; the
	// counter is the process's, so another store's writes may start the
	// timer too (an extra checkpoint, never a missed one).
	after      time.Duration
	pending    atomic.Bool
	first      chan struct{} // capacity 1
	lastWrites atomic.Int64
	passes     atomic.Int64 // checkpoints run (tests)
	// restartDue says the WAL has grown past restartFrames: the writer
	// should finish the checkpoint itself (finish).
	restartDue atomic.Bool
	// sinceRestart counts the bodies committed since the WAL was last
	// copied back whole: past restartBodies the writer finishes a
	// checkpoint whether or not loop has run (on a loaded machine its
	// goroutine can wait while the writer's runs, and the WAL then grew
	// by everything written).
	sinceRestart atomic.Int64
	finishes     atomic.Int64 // finish's checkpoints on the writer (tests)
	// ran, when set (tests), is sent to after each checkpoint.
	ran chan struct{}
}

func newCheckpointer(db *sql.DB, every int, after time.Duration, ran chan struct{}) *checkpointer {
	if every == 0 {
		every = checkpointEvery
	}
	if after == 0 {
		after = checkpointAfter
	}
	c := &checkpointer{db: db, every: int64(every), after: after, kick: make(chan struct{}, 1),
		first: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), ran: ran}
	go c.loop()
	return c
}

// committed counts n bodies committed by the writer and asks for a
// checkpoint once c.every have been since the last one, or c.after after
// the first of them. It never blocks.
func (c *checkpointer) committed(n int) {
	if c.every < 0 {
		return
	}
	if c.sinceRestart.Add(int64(n)) >= restartBodies {
		c.restartDue.Store(true)
	}
	// Only a batch that wrote to the WAL starts the timer: bodies that
	// change nothing (a sweep that finds no run to end) commit without a
	// frame, and an idle gateway's checkpointer then stays without its
	// connection (opening it costs about 1.9 MiB resident).
	if w := walvfs.Writes(); c.lastWrites.Swap(w) != w && c.after > 0 && !c.pending.Swap(true) {
		select {
		case c.first <- struct{}{}:
		default:
		}
	}
	if c.bodies.Add(int64(n)) < c.every {
		return
	}
	c.bodies.Store(0)
	select {
	case c.kick <- struct{}{}:
	default: // one is already due
	}
}

func (c *checkpointer) loop() {
	defer close(c.done)
	// The timer is made at the first body, not at the start: a gateway's
	// start touches no timer code for it.
	var timer *time.Timer
	var due <-chan time.Time // timer's channel once made
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-c.kick:
		case <-c.first:
			if timer == nil {
				timer = time.NewTimer(c.after)
				due = timer.C
			} else {
				timer.Reset(c.after)
			}
			continue
		case <-due:
		case <-c.stop:
			return
		}
		if timer != nil {
			timer.Stop()
		}
		// Bodies committed from here on wait for the next checkpoint
		// (this one may copy them too).
		c.pending.Store(false)
		// A failed checkpoint (a reader's snapshot, an I/O error) is
		// tried again at the next kick; the WAL only grows meanwhile.
		var busy, frames, copied int
		if c.db.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied) == nil && frames >= restartFrames {
			c.restartDue.Store(true)
		}
		c.passes.Add(1)
		if c.ran != nil {
			select {
			case c.ran <- struct{}{}:
			case <-c.stop:
				return
			}
		}
	}
}

// restartFrames is the WAL length at which the writer finishes a
// checkpoint itself. SQLite starts the WAL again from its beginning only
// when a write transaction begins with every frame copied back; under a
// steady stream of commits the background checkpoint never sees that (new
// frames come while it copies), and the WAL would grow without bound. It
// is twice the frames of checkpointEvery bodies, so that the writer
// finishes about every other checkpoint.
const restartFrames = 6000

// restartBodies is how many committed bodies make the writer finish a
// checkpoint even when loop has not reported restartFrames: at about nine
// pages a body (9.2 of 1 KiB in a warm turn), twice restartFrames.
const restartBodies = 2 * restartFrames / 9

// finish runs on the writer, between commits, once the WAL has grown past
// restartFrames: it copies the frames the last background checkpoint did
// not (no write is in progress, so it can copy them all unless a reader
// still needs one), and the next write transaction then starts the WAL
// again. A failure (another checkpoint at work, a reader's snapshot) is
// tried again after the next batch. w is the writer's connection, outside
// any transaction; a zero w (the writer has none: it could not reopen a
// broken one) leaves the checkpoint due.
func (c *checkpointer) finish(w wtx) {
	if w.w == nil || !c.restartDue.Swap(false) {
		return
	}
	var busy, frames, copied int
	err := w.QueryRowContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied)
	if err != nil || busy != 0 || copied < frames {
		c.restartDue.Store(true)
	} else {
		c.sinceRestart.Store(0)
	}
	c.finishes.Add(1)
}

// close stops the checkpointer after the checkpoint in progress and
// closes its connection.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.done
	return c.db.Close()
}
