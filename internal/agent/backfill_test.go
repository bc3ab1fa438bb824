package agent

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// seqs lists a run's logged events as "seq:stream/phase".
func (l *eventLog) seqs(runID string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	if rl := l.runs[runID]; rl != nil {
		for _, le := range rl.events {
			ev := le.event()
			out = append(out, fmt.Sprintf("%d:%s/%s", ev.Seq, ev.Stream, ev.Phase))
		}
	}
	return out
}

// TestBackfill: an earlier event of a run executing elsewhere, sent
// again, goes in its place in the run's log, even before the end, once;
// it is not new to subscribers; an end recovered from the store is
// renumbered after it; nothing goes after a run's own end.
func TestBackfill(t *testing.T) {
	now := time.Unix(1000, 0)
	delta := func(run string, seq int64) Event {
		return Event{RunID: run, SessionKey: "k", Seq: seq, Stream: StreamAssistant, Delta: "x", remote: true}
	}
	end := func(run string, seq int64, recovered bool) Event {
		return Event{RunID: run, SessionKey: "k", Seq: seq, Stream: StreamLifecycle, Phase: PhaseEnd, Run: &store.Run{RunID: run}, remote: true, recovered: recovered}
	}
	for _, c := range []struct {
		name string
		add  []Event
		want []string
	}{
		{"before its own end", []Event{end("r", 5, false), delta("r", 3), delta("r", 1), delta("r", 3), delta("r", 4), delta("r", 2)},
			[]string{"1:assistant/", "2:assistant/", "3:assistant/", "4:assistant/", "5:lifecycle/end"}},
		{"not after its own end", []Event{end("r", 3, false), delta("r", 3), delta("r", 4)},
			[]string{"3:lifecycle/end"}},
		{"into a gap of a running run", []Event{delta("r", 1), delta("r", 4), delta("r", 2), delta("r", 2), delta("r", 3)},
			[]string{"1:assistant/", "2:assistant/", "3:assistant/", "4:assistant/"}},
		{"before a recovered end, renumbered", []Event{end("r", 0, true), delta("r", 1), delta("r", 2), delta("r", 3)},
			[]string{"1:assistant/", "2:assistant/", "3:assistant/", "4:lifecycle/end"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newEventLog()
			for i, ev := range c.add {
				isNew := l.add(ev, now)
				if i > 0 && isNew && ev.Seq <= c.add[i-1].Seq {
					t.Errorf("event %d (seq %d) reported new after seq %d", i, ev.Seq, c.add[i-1].Seq)
				}
			}
			if got := l.seqs("r"); !slices.Equal(got, c.want) {
				t.Errorf("log %v, want %v", got, c.want)
			}
		})
	}
}

// TestExecutingAndRunEvents: a peer that starts wanting a session is sent
// its running runs' events, and those of the runs that ended since it
// started wanting it, without their ends; a replay gets one run's, end
// excepted; runs that executed elsewhere are never sent.
func TestExecutingAndRunEvents(t *testing.T) {
	r := &Runner{events: newEventLog()}
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	add := func(run, key string, seq int64, end bool, when time.Time, remote bool) {
		ev := Event{RunID: run, SessionKey: key, Seq: seq, Time: when, Stream: StreamAssistant, remote: remote}
		if end {
			ev.Stream, ev.Phase, ev.Run = StreamLifecycle, PhaseEnd, &store.Run{RunID: run}
		}
		r.events.add(ev, when)
	}
	add("running", "k", 1, false, at(0), false)
	add("old", "k", 1, false, at(0), false)
	add("old", "k", 2, true, at(1), false)
	add("recent", "k", 1, false, at(2), false)
	add("recent", "k", 2, true, at(4), false)
	add("other", "j", 1, false, at(4), false)
	add("remote", "k", 1, false, at(4), true)

	runs := func(evs []Event) map[string]int {
		m := map[string]int{}
		for _, ev := range evs {
			m[ev.RunID]++
			if isEnd(ev) {
				t.Errorf("an end sent again: %s", ev.RunID)
			}
		}
		return m
	}
	if got := runs(r.Executing("k", time.Time{})); len(got) != 1 || got["running"] != 1 {
		t.Errorf("Executing(k) without since = %v", got)
	}
	if got := runs(r.Executing("k", at(3))); len(got) != 2 || got["running"] != 1 || got["recent"] != 1 {
		t.Errorf("Executing(k, since 3 s) = %v", got)
	}
	if got := runs(r.Executing(WantAll, at(3))); len(got) != 3 || got["other"] != 1 {
		t.Errorf("Executing(*, since 3 s) = %v", got)
	}
	if got := runs(r.RunEvents("old")); len(got) != 1 || got["old"] != 1 {
		t.Errorf("RunEvents(old) = %v", got)
	}
	if got := r.RunEvents("remote"); got != nil {
		t.Errorf("RunEvents of a run that executed elsewhere = %v", got)
	}
}

// TestMissesRemote: a watcher asks for a replay only when the end of a
// run that executed elsewhere follows a gap, or came from the store.
func TestMissesRemote(t *testing.T) {
	ev := func(seq int64, remote, end, recovered bool) Event {
		e := Event{Seq: seq, Stream: StreamAssistant, remote: remote, recovered: recovered}
		if end {
			e.Stream, e.Phase = StreamLifecycle, PhaseEnd
		}
		return e
	}
	for _, c := range []struct {
		name  string
		evs   []Event
		after int64
		want  bool
	}{
		{"nothing", nil, 0, false},
		{"whole", []Event{ev(1, true, false, false), ev(2, true, true, false)}, 0, false},
		{"resumed whole", []Event{ev(3, true, false, false), ev(4, true, true, false)}, 2, false},
		{"end alone", []Event{ev(5, true, true, false)}, 0, true},
		{"gap in the middle", []Event{ev(1, true, false, false), ev(4, true, true, false)}, 0, true},
		{"recovered end", []Event{ev(1, true, true, true)}, 0, true},
		{"local end", []Event{ev(5, false, true, false)}, 0, false},
		{"no end yet", []Event{ev(3, true, false, false)}, 0, false},
	} {
		if got := missesRemote(c.evs, c.after); got != c.want {
			t.Errorf("%s: missesRemote = %v, want %v", c.name, got, c.want)
		}
	}
}
