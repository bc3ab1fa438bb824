package agent

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// TestLogEventRoundTrip: every event the runner emits, relays or recovers
// comes out of its logged form as it went in (an end's run record without
// its input), the ones that do not fit the compact form (kept whole)
// included.
func TestLogEventRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 28, 9, 0, 0, 5, time.Local)
	base := Event{RunID: "r1", SessionKey: "agent:main:s", SessionID: "t1", AgentID: "main", Lane: "main",
		SpawnedBy: "agent:main:parent", Seq: 4, SessionSeq: 9, Time: at}
	with := func(f func(*Event)) Event {
		e := base
		f(&e)
		return e
	}
	usage := &transcript.Usage{Input: 10, Output: 3}
	tool := &ToolEvent{Name: "exec", CallID: "c1", Args: json.RawMessage(`{"cmd":"ls"}`), Result: &tools.Result{}}
	run := &store.Run{RunID: "r1", Status: store.RunStatus("ok"), StopReason: "stop"}
	msg := transcript.NewAssistantMessage([]transcript.Block{transcript.TextBlock("hi")}, at)
	cases := map[string]Event{
		"start":     with(func(e *Event) { e.Stream, e.Phase = StreamLifecycle, PhaseStart }),
		"model":     with(func(e *Event) { e.Stream, e.Phase, e.ProviderID, e.ModelID = StreamLifecycle, PhaseModel, "p", "m" }),
		"assistant": with(func(e *Event) { e.Stream, e.Text, e.Delta = StreamAssistant, "hello", "lo" }),
		"tool":      with(func(e *Event) { e.Stream, e.Phase, e.Tool = StreamTool, PhaseResult, tool }),
		"usage":     with(func(e *Event) { e.Stream, e.Usage = StreamUsage, usage }),
		"queued": with(func(e *Event) {
			e.Stream, e.Phase, e.Queue = StreamLifecycle, PhaseQueued, &QueueEvent{Position: 2, Mode: "steer"}
		}),
		"compaction": with(func(e *Event) {
			e.Stream, e.Phase, e.Compaction = StreamCompaction, PhaseEnd, &CompactionEvent{Reason: "threshold"}
		}),
		"end": with(func(e *Event) { e.Stream, e.Phase, e.Run, e.Message = StreamLifecycle, PhaseEnd, run, msg }),
		"recovered": with(func(e *Event) {
			e.Stream, e.Phase, e.Run, e.recovered, e.remote = StreamLifecycle, PhaseEnd, run, true, true
		}),
		"post": with(func(e *Event) { e.Stream, e.Message = StreamPost, msg }),
		// Kept whole: a stream of its own, text with a model, two of
		// the single pointers.
		"other stream":   with(func(e *Event) { e.Stream, e.Phase, e.Text = "custom", "x", "t" }),
		"text and model": with(func(e *Event) { e.Stream, e.Text, e.ModelID = StreamAssistant, "t", "m" }),
		"tool and usage": with(func(e *Event) { e.Stream, e.Tool, e.Usage = StreamTool, tool, usage }),
		"everything else": with(func(e *Event) {
			e.Queue, e.Compaction, e.Run, e.Message, e.Delta = &QueueEvent{}, &CompactionEvent{}, run, msg, "d"
		}),
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			le := packEvent(&in, identOf(&in, nil))
			if got := le.event(); !reflect.DeepEqual(got, in) {
				t.Fatalf("logged form gave\n%+v\nwant\n%+v", got, in)
			}
			if le.isEnd() != isEnd(in) {
				t.Errorf("isEnd %v; want %v", le.isEnd(), isEnd(in))
			}
			if le.isPostOf("r1") != (in.Stream == StreamPost) {
				t.Errorf("isPostOf %v; want %v", le.isPostOf("r1"), in.Stream == StreamPost)
			}
		})
	}

	// A relayed event logged undecoded keeps its decoder.
	lazy := Event{RunID: "r2", SessionKey: "agent:main:s", Seq: 3, remote: true,
		lazy: func() (Event, error) { return Event{}, errors.New("decoded") }}
	got := packEvent(&lazy, identOf(&lazy, nil)).event()
	if got.lazy == nil || got.RunID != "r2" || got.Seq != 3 || !got.remote {
		t.Fatalf("lazy event came back as %+v", got)
	}
	if _, err := got.lazy(); err == nil || err.Error() != "decoded" {
		t.Fatalf("lazy decoder gave %v; want the one logged", err)
	}
}

// TestLogEventDropsTheEndsInput: the log keeps an end's run record
// without its input (which may hold images), whether the end fits the
// compact form or is kept whole, and leaves the subscribers' record as it
// was.
func TestLogEventDropsTheEndsInput(t *testing.T) {
	input := json.RawMessage(`{"message":"hi","images":[{"data":"AAAA"}]}`)
	for name, in := range map[string]Event{
		"compact": {RunID: "r", SessionKey: "k", Seq: 3, Stream: StreamLifecycle, Phase: PhaseEnd},
		"whole":   {RunID: "r", SessionKey: "k", Seq: 3, Stream: StreamLifecycle, Phase: PhaseEnd, Text: "t", ModelID: "m"},
	} {
		t.Run(name, func(t *testing.T) {
			run := &store.Run{RunID: "r", Status: store.RunStatus("ok"), Error: "e", Input: input}
			in.Run = run
			got := packEvent(&in, identOf(&in, nil)).event()
			if got.Run == nil || got.Run.Input != nil {
				t.Fatalf("logged end's run record: %+v; want one without input", got.Run)
			}
			if got.Run.RunID != "r" || got.Run.Status != "ok" || got.Run.Error != "e" {
				t.Fatalf("logged end's run record lost more than its input: %+v", got.Run)
			}
			if string(run.Input) != string(input) || in.Run != run {
				t.Fatal("logging the end changed the subscribers' run record")
			}
		})
	}
	// Through the log, as a watcher resuming after the run's end gets it.
	l := newEventLog()
	end := Event{RunID: "r", SessionKey: "k", Seq: 1, Stream: StreamLifecycle, Phase: PhaseEnd,
		Run: &store.Run{RunID: "r", Input: input}}
	l.add(end, time.Unix(1000, 0))
	runEvs, _, _ := l.since("r", 0, time.Unix(1000, 0))
	sessEvs, _ := l.sessionSince("k", 0, time.Unix(1000, 0))
	if len(runEvs) != 1 || runEvs[0].Run.Input != nil || len(sessEvs) != 1 || sessEvs[0].Run.Input != nil {
		t.Fatalf("watchers got %+v and %+v; want the end without its input", runEvs, sessEvs)
	}
}

// TestLogEventSharesIdentity: a run's events share one identity while it
// stays the same, and an event that changes it gets its own.
func TestLogEventSharesIdentity(t *testing.T) {
	a := Event{RunID: "r", SessionKey: "k", Lane: "l"}
	first := identOf(&a, nil)
	if identOf(&a, first) != first {
		t.Fatal("an event of the same run got a new identity")
	}
	b := a
	b.SessionID = "t"
	if id := identOf(&b, first); id == first || id.SessionID != "t" {
		t.Fatalf("an event with another transcript got %+v", id)
	}
}
