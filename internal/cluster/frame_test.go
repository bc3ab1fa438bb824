package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// TestFrameRoundTrip: a batch's headers carry each event's kind, number,
// run and session as written, whatever characters the ids hold, and the
// frame is text a PostgreSQL text column takes (valid UTF-8, no NUL).
func TestFrameRoundTrip(t *testing.T) {
	evs := []agent.Event{
		{RunID: "r1", SessionKey: "agent:main:main", Seq: 1, Stream: agent.StreamLifecycle, Phase: agent.PhaseStart},
		{RunID: "r 2", SessionKey: `agent:main:"quoted" key`, Seq: 2, Stream: agent.StreamAssistant, Text: "hé\nllo", Delta: "llo"},
		{RunID: "r\x003", SessionKey: "line\nbreak\\", Seq: 3, Stream: agent.StreamTool, Phase: agent.PhaseStart,
			Tool: &agent.ToolEvent{Name: "exec", CallID: "c1", Args: json.RawMessage("{\n  \"cmd\": \"ls\"\n}")}},
		{RunID: "r4", SessionKey: "ünïcode 🙂", Stream: agent.StreamPost, Message: &transcript.Message{Role: transcript.RoleAssistant}},
		{RunID: "r1", SessionKey: "agent:main:main", Seq: 9, Stream: agent.StreamLifecycle, Phase: agent.PhaseEnd,
			Run: &store.Run{RunID: "r1", Status: store.RunOK}},
		{RunID: "", SessionKey: "", Stream: agent.StreamLifecycle, Phase: agent.PhaseQueued, Queue: &agent.QueueEvent{Position: 1}},
	}
	body, err := encodeFrame(evs)
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(body) || strings.ContainsRune(string(body), 0) {
		t.Fatalf("frame is not text a text column takes: %q", body)
	}
	got, err := decodeFrame(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(evs) {
		t.Fatalf("%d events read, %d written", len(got), len(evs))
	}
	wantKinds := []byte{kindRun, kindRun, kindRun, kindPost, kindEnd, kindRun}
	for i, e := range got {
		w := evs[i]
		if e.kind != wantKinds[i] || e.seq != w.Seq || e.runID != w.RunID || e.sessionKey != w.SessionKey {
			t.Errorf("event %d: header %c %d %q %q, want %c %d %q %q", i, e.kind, e.seq, e.runID, e.sessionKey, wantKinds[i], w.Seq, w.RunID, w.SessionKey)
		}
		if e.always() != (wantKinds[i] != kindRun) {
			t.Errorf("event %d: always = %v", i, e.always())
		}
		ev, err := e.decode()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if ev.RunID != w.RunID || ev.Seq != w.Seq || ev.Stream != w.Stream || ev.Phase != w.Phase || ev.Text != w.Text {
			t.Errorf("event %d decoded as %+v, want %+v", i, ev, w)
		}
	}
	if got[2].decodeTool(t).Name != "exec" || got[4].decodeRun(t).Status != store.RunOK {
		t.Error("tool or run lost in the frame")
	}
}

func (e relayed) decodeTool(t *testing.T) *agent.ToolEvent {
	ev, err := e.decode()
	if err != nil || ev.Tool == nil {
		t.Fatalf("tool event: %+v, %v", ev, err)
	}
	return ev.Tool
}

func (e relayed) decodeRun(t *testing.T) *store.Run {
	ev, err := e.decode()
	if err != nil || ev.Run == nil {
		t.Fatalf("end event: %+v, %v", ev, err)
	}
	return ev.Run
}

// TestFramesFitTheLimit: a batch cut into frames of at most limit bytes
// keeps every event once, in order; an event larger than the limit gets
// a frame of its own.
func TestFramesFitTheLimit(t *testing.T) {
	evs := benchBatch()
	big := agent.Event{RunID: "big", SessionKey: "k", Seq: 1, Stream: agent.StreamAssistant, Text: strings.Repeat("x", 3000)}
	evs = append(evs[:5], append([]agent.Event{big}, evs[5:]...)...)
	const limit = 800
	frames, err := encodeFrames(evs, limit)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	oversized := 0
	for _, f := range frames {
		rs, err := decodeFrame(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(f) > limit {
			oversized++
			if len(rs) != 1 || rs[0].runID != "big" {
				t.Errorf("a frame over the limit holds %d events (%q first)", len(rs), rs[0].runID)
			}
		}
		for _, r := range rs {
			got = append(got, fmt.Sprintf("%s/%d", r.runID, r.seq))
		}
	}
	var want []string
	for _, ev := range evs {
		want = append(want, fmt.Sprintf("%s/%d", ev.RunID, ev.Seq))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") || oversized != 1 || len(frames) < 4 {
		t.Fatalf("%d frames (%d oversized) hold %v, want %v", len(frames), oversized, got, want)
	}
	if one, err := encodeFrames(evs, 1<<20); err != nil || len(one) != 1 {
		t.Fatalf("under a large limit: %d frames, %v", len(one), err)
	}
}

// BenchmarkEncodeFrame: a two-node bench batch's worth of events (a turn's
// start, model, assistant deltas, usage and end).
func BenchmarkEncodeFrame(b *testing.B) {
	evs := benchBatch()
	for b.Loop() {
		if _, err := encodeFrame(evs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeFrame(b *testing.B) {
	body, err := encodeFrame(benchBatch())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := decodeFrame(body); err != nil {
			b.Fatal(err)
		}
	}
}

func benchBatch() []agent.Event {
	var evs []agent.Event
	for i := range 4 {
		run, key := fmt.Sprintf("bench-%d", i), fmt.Sprintf("agent:main:c%d", i)
		evs = append(evs,
			agent.Event{RunID: run, SessionKey: key, Seq: 1, Stream: agent.StreamLifecycle, Phase: agent.PhaseStart},
			agent.Event{RunID: run, SessionKey: key, Seq: 2, Stream: agent.StreamLifecycle, Phase: agent.PhaseModel, ProviderID: "scripted", ModelID: "scripted-1"},
			agent.Event{RunID: run, SessionKey: key, Seq: 3, Stream: agent.StreamAssistant, Text: "echo: hi", Delta: "echo: hi"},
			agent.Event{RunID: run, SessionKey: key, Seq: 4, Stream: agent.StreamLifecycle, Phase: agent.PhaseEnd,
				Run: &store.Run{RunID: run, SessionKey: key, Status: store.RunOK, Input: json.RawMessage(`{"message":"hi"}`)}})
	}
	return evs
}

// TestFrameReadsFirstFormat: a batch from a node of the version before
// (a JSON array of events) is read, each event one every node takes.
func TestFrameReadsFirstFormat(t *testing.T) {
	old, err := json.Marshal([]agent.Event{
		{RunID: "r1", SessionKey: "k", Seq: 1, Stream: agent.StreamAssistant, Text: "x"},
		{RunID: "r1", SessionKey: "k", Seq: 2, Stream: agent.StreamLifecycle, Phase: agent.PhaseEnd},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeFrame(old)
	if err != nil || len(got) != 2 {
		t.Fatalf("decodeFrame(first format) = %d events, %v", len(got), err)
	}
	for i, e := range got {
		ev, err := e.decode()
		if !e.always() || err != nil || ev.Seq != int64(i+1) {
			t.Errorf("event %d: always %v, %+v, %v", i, e.always(), ev, err)
		}
	}
}

// TestFrameRefusesGarbage: a body that is not a frame is an error, never
// a panic or a partial batch taken as whole.
func TestFrameRefusesGarbage(t *testing.T) {
	good, err := encodeFrame([]agent.Event{{RunID: "r1", SessionKey: "k", Seq: 1, Stream: agent.StreamAssistant}})
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"no magic":        "hello",
		"header cut":      frameMagic + `r 1 "a`,
		"payload cut":     string(good[:len(good)-1]),
		"bad seq":         frameMagic + `r x "a" "b"` + "\n{}\n",
		"unquoted run":    frameMagic + `r 1 a "b"` + "\n{}\n",
		"no key":          frameMagic + `r 1 "a"` + "\n{}\n",
		"trailing":        frameMagic + `r 1 "a" "b" x` + "\n{}\n",
		"no kind":         frameMagic + "\n{}\n",
		"bad json array":  "[{",
		"same, first":     frameMagic + `r 1 "a" "b" =` + "\n{}\n",
		"same, other run": string(good) + `r 2 "c" "b" =` + "\n{}\n",
		"three of four":   frameMagic + `r 1 "a" "b" "s" "m" ""` + "\n{}\n",
		"five of four":    frameMagic + `r 1 "a" "b" "s" "m" "" "" ""` + "\n{}\n",
		"no identity":     frameMagic + `r 1 "a" "b" ` + "\n{}\n",
		"v3 trailing":     frameMagicV3 + `r 1 "a" "b" "" "" "" ""` + "\n{}\n",
	} {
		t.Run(name, func(t *testing.T) {
			if evs, err := decodeFrame([]byte(body)); err == nil {
				t.Fatalf("decodeFrame(%q) = %d events, no error", body, len(evs))
			}
		})
	}
}

// relayRunner is the part of the runner relayBatch uses: it records what
// it is handed.
type relayRunner struct {
	Runner // nil: relayBatch calls only the methods below
	wants  map[string]bool
	asked  map[string]int
	got    []string
}

func (r *relayRunner) WantsRelayed(key, runID string) bool {
	r.asked[runID]++
	return r.wants[runID]
}

func (r *relayRunner) Relay(ev agent.Event) {
	r.got = append(r.got, fmt.Sprintf("relay %s %d %s/%s", ev.RunID, ev.Seq, ev.Stream, ev.Phase))
}

func (r *relayRunner) RelayLogged(runID, key string, seq int64, decode func() (agent.Event, error)) {
	r.got = append(r.got, fmt.Sprintf("logged %s %d", runID, seq))
}

// TestRelayBatchDecodesOnlyWanted: of the runs no subscriber wants, a
// batch's events are handed over undecoded (a payload that is not even
// JSON goes through), except ends and posts; the runner is asked once per
// run.
func TestRelayBatchDecodesOnlyWanted(t *testing.T) {
	body, err := encodeFrame([]agent.Event{
		{RunID: "w", SessionKey: "kw", Seq: 1, Stream: agent.StreamLifecycle, Phase: agent.PhaseStart},
		{RunID: "u", SessionKey: "ku", Seq: 1, Stream: agent.StreamLifecycle, Phase: agent.PhaseStart},
		{RunID: "w", SessionKey: "kw", Seq: 2, Stream: agent.StreamAssistant, Text: "a"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// An event of u whose JSON is garbage: never decoded, so no error.
	body = fmt.Appendf(body, "%c 2 %q %q =\n{garbage!\n", kindRun, "u", "ku")
	tail, err := encodeFrame([]agent.Event{
		{RunID: "u", SessionKey: "ku", Stream: agent.StreamPost, Message: &transcript.Message{Role: transcript.RoleUser}},
		{RunID: "u", SessionKey: "ku", Seq: 3, Stream: agent.StreamLifecycle, Phase: agent.PhaseEnd, Run: &store.Run{RunID: "u"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	body = append(body, tail[len(frameMagic):]...)
	r := &relayRunner{wants: map[string]bool{"w": true}, asked: map[string]int{}}
	n := &Node{runner: r}
	if err := n.relayBatch("", body); err != nil {
		t.Fatalf("relayBatch: %v", err)
	}
	want := []string{
		"relay w 1 lifecycle/start",
		"logged u 1",
		"relay w 2 assistant/",
		"logged u 2",
		"relay u 0 post/",
		"relay u 3 lifecycle/end",
	}
	if strings.Join(r.got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("runner got:\n%s\nwant:\n%s", strings.Join(r.got, "\n"), strings.Join(want, "\n"))
	}
	if r.asked["w"] != 1 || r.asked["u"] != 1 {
		t.Errorf("asked %v, want once per run", r.asked)
	}
	// A wanted event that does not decode is skipped, and said.
	bad := fmt.Appendf([]byte(frameMagic), "%c 4 %q %q \"\" \"\" \"\" \"\"\n{]\n", kindRun, "w", "kw")
	r.got = nil
	if err := n.relayBatch("", bad); err == nil || len(r.got) != 0 {
		t.Fatalf("a wanted event that does not decode: %v, runner got %v", err, r.got)
	}
	if err := n.relayBatch("", []byte("garbage")); !errors.Is(err, errBadFrame) {
		t.Fatalf("relayBatch(garbage) = %v", err)
	}
}

// fullEvent is an end with every field of agent.Event and of its run set
// (TestWireEventKeepsEveryField checks that none is zero).
func fullEvent() agent.Event {
	cost := transcript.Cost{Input: 0.5, Total: 1}
	return agent.Event{
		RunID: "run-1", SessionKey: "agent:main:k", SessionID: "sid-1", AgentID: "main", Lane: "subagent",
		SpawnedBy: "agent:main:parent", Seq: 7, SessionSeq: 42, Time: time.Unix(0, 1_795_856_132_165_123_456),
		Stream: agent.StreamLifecycle, Phase: agent.PhaseEnd, Text: "text", Delta: "delta",
		ProviderID: "scripted", ModelID: "echo-1",
		Tool:       &agent.ToolEvent{Name: "exec", CallID: "c1", Args: json.RawMessage(`{"cmd":"ls"}`)},
		Queue:      &agent.QueueEvent{Position: 2, Mode: "steer", Message: "hi"},
		Usage:      &transcript.Usage{Input: 3, Output: 4, TotalTokens: 7},
		Compaction: &agent.CompactionEvent{Reason: "threshold", Completed: true, Outcome: "completed", TokensBefore: 9, TokensAfter: 3},
		Run: &store.Run{RunID: "run-1", SessionKey: "agent:main:k", SessionID: "sid-1", AgentID: "main", Lane: "subagent",
			Status: store.RunOK, Input: json.RawMessage(`{"message":"hi"}`),
			CreatedAt: time.Unix(0, 1_795_856_132_000_000_000), StartedAt: time.Unix(0, 1_795_856_132_100_000_000),
			EndedAt: time.Unix(0, 1_795_856_132_165_000_000), Error: "boom", StopReason: "stop",
			Usage: transcript.Usage{Input: 3, Output: 4, TotalTokens: 7, Cost: &cost}},
		Message: &transcript.Message{Role: transcript.RoleAssistant, StopReason: "stop"},
	}
}

// TestWireEventKeepsEveryField: an event goes through a frame whole, every
// field of agent.Event and of an end's store.Run (a field added to either
// and not to wireEvent fails here) but the run's Input, which is not
// relayed (see wireRun), and a run whose ids are not its event's keeps its
// own.
func TestWireEventKeepsEveryField(t *testing.T) {
	ev := fullEvent()
	for _, v := range []reflect.Value{reflect.ValueOf(ev), reflect.ValueOf(*ev.Run)} {
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() && v.Field(i).IsZero() {
				t.Fatalf("%s.%s is not set in fullEvent: set it, and carry it in wireEvent", v.Type(), f.Name)
			}
		}
	}
	other := fullEvent()
	other.Run.RunID, other.Run.SessionKey, other.Run.SessionID, other.Run.AgentID, other.Run.Lane = "run-0", "", "sid-0", "", "main"
	other.Run.StartedAt, other.Run.EndedAt, other.Time = time.Time{}, time.Time{}, time.Time{}
	for _, want := range []agent.Event{ev, other} {
		body, err := encodeFrame([]agent.Event{want})
		if err != nil {
			t.Fatal(err)
		}
		rs, err := decodeFrame(body)
		if err != nil || len(rs) != 1 {
			t.Fatalf("decodeFrame = %d events, %v", len(rs), err)
		}
		if bytes.Contains(body, want.Run.Input) {
			t.Errorf("the run's input is in the frame: %s", body)
		}
		got, err := rs[0].decode()
		if err != nil {
			t.Fatal(err)
		}
		run := *want.Run
		run.Input = nil
		want.Run = &run
		if !reflect.DeepEqual(got, want) {
			t.Errorf("through a frame:\n got %+v\n run %+v\nwant %+v\n run %+v", got, got.Run, want, want.Run)
		}
	}
}

// TestFrameReadsFormerFormat: a frame of the format before (SBR2: the
// events' agent.Event JSON) is read, and a payload holding one is taken
// as a frame; a batch in the new format is at most half its size.
func TestFrameReadsFormerFormat(t *testing.T) {
	evs := append(benchBatch(), fullEvent())
	v2 := []byte(frameMagicV2)
	for _, ev := range evs {
		line, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		v2 = fmt.Appendf(v2, "%c %d %q %q\n%s\n", kindOf(ev), ev.Seq, ev.RunID, ev.SessionKey, line)
	}
	if !isFrame(string(v2)) {
		t.Fatal("an SBR2 payload is not taken as a frame")
	}
	rs, err := decodeFrame(v2)
	if err != nil || len(rs) != len(evs) {
		t.Fatalf("decodeFrame(SBR2) = %d events, %v", len(rs), err)
	}
	for i, r := range rs {
		got, err := r.decode()
		want := evs[i]
		if err != nil || got.RunID != want.RunID || got.Seq != want.Seq || got.Phase != want.Phase || (want.Run != nil) != (got.Run != nil) {
			t.Errorf("event %d: %+v, %v; want %+v", i, got, err, want)
		}
	}
	v3, err := encodeFrame(benchBatch())
	if err != nil {
		t.Fatal(err)
	}
	old := v2[:bytes.LastIndex(v2[:len(v2)-1], []byte("\ne "))+1] // without fullEvent's lines
	if len(v3)*2 > len(old) {
		t.Errorf("a batch takes %d bytes, %d in the format before: want at most half", len(v3), len(old))
	}
}

// BenchmarkDecodeEnds: what every other node does with a batch it is
// sent: split it, and decode its ends.
func BenchmarkDecodeEnds(b *testing.B) {
	body, err := encodeFrame(benchBatch())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		rs, err := decodeFrame(body)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range rs {
			if r.always() {
				if _, err := r.decode(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}

// turnEvents are the events of one warm turn as the instant model emits
// them, with the identity every event of a run carries and the end's
// run record.
func turnEvents(i int, now time.Time) []agent.Event {
	run, key := fmt.Sprintf("t2-c%d-%d", i, 7*i), fmt.Sprintf("agent:main:c%d", i)
	base := agent.Event{RunID: run, SessionKey: key, SessionID: fmt.Sprintf("9f5f20e8-b163-4d4f-b95b-ac15f57c%04d", i),
		AgentID: "main", Time: now}
	at := func(seq int64, f func(*agent.Event)) agent.Event {
		ev := base
		ev.Seq = seq
		f(&ev)
		return ev
	}
	return []agent.Event{
		at(1, func(ev *agent.Event) { ev.Stream, ev.Phase = agent.StreamLifecycle, agent.PhaseStart }),
		at(2, func(ev *agent.Event) {
			ev.Stream, ev.Phase, ev.ProviderID, ev.ModelID = agent.StreamLifecycle, agent.PhaseModel, "scripted", "echo-1"
		}),
		at(3, func(ev *agent.Event) { ev.Stream, ev.Text, ev.Delta = agent.StreamAssistant, "echo: hi", "echo: hi" }),
		at(4, func(ev *agent.Event) { ev.Stream, ev.Text = agent.StreamAssistant, "echo: hi" }),
		at(5, func(ev *agent.Event) {
			ev.Stream, ev.Usage = "usage", &transcript.Usage{Input: 1, Output: 2, TotalTokens: 3}
		}),
		at(6, func(ev *agent.Event) {
			ev.Stream, ev.Phase = agent.StreamLifecycle, agent.PhaseEnd
			ev.Message = &transcript.Message{Role: transcript.RoleAssistant, StopReason: "stop", Provider: "scripted", Model: "echo-1"}
			ev.Run = &store.Run{RunID: run, SessionKey: key, SessionID: ev.SessionID, AgentID: "main", Status: store.RunOK,
				CreatedAt: now, StartedAt: now, EndedAt: now, StopReason: "stop", Usage: transcript.Usage{Input: 1, Output: 2, TotalTokens: 3}}
		}),
	}
}

// encodeV3 is a batch in the format before (SBR3: no identity in the
// headers, each event's JSON carries it).
func encodeV3(t testing.TB, evs []agent.Event) []byte {
	body := []byte(frameMagicV3)
	for _, ev := range evs {
		line, err := json.Marshal(toWire(&ev))
		if err != nil {
			t.Fatal(err)
		}
		body = fmt.Appendf(body, "%c %d %q %q\n%s\n", kindOf(ev), ev.Seq, ev.RunID, ev.SessionKey, line)
	}
	return body
}

// TestFrameIdentityOncePerRun: a run's session id, agent, lane and
// spawner are written once per frame (again when they change, and in each
// frame a batch is cut into), and every event gets its own back; a warm
// turn's events take at most four fifths of the bytes they took in the
// format before (79%), which is still read.
func TestFrameIdentityOncePerRun(t *testing.T) {
	now := time.Unix(0, 1_795_878_182_468_932_495)
	var evs []agent.Event
	for i := range 3 {
		evs = append(evs, turnEvents(i, now)...)
	}
	// Turns interleaved as a busy node's batch has them, and a run whose
	// identity changes midway (a lane moved).
	evs[1], evs[6] = evs[6], evs[1]
	evs[10].Lane, evs[11].Lane = "subagent", "subagent"
	for _, limit := range []int{1 << 20, 900} {
		frames, err := encodeFrames(evs, limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []agent.Event
		for _, f := range frames {
			rs, err := decodeFrame(f)
			if err != nil {
				t.Fatalf("limit %d: %v", limit, err)
			}
			runs := map[string]bool{}
			for _, r := range rs {
				runs[r.runID] = true
				ev, err := r.decode()
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ev)
			}
			if limit > len(f) && len(runs) == 3 {
				// One full identity per run, one more for the lane change.
				if n := bytes.Count(f, []byte(`"main" "`)); n != 4 {
					t.Errorf("identity written %d times in a frame of 3 runs, want 4:\n%s", n, f)
				}
			}
		}
		if len(got) != len(evs) {
			t.Fatalf("limit %d: %d events read, %d written", limit, len(got), len(evs))
		}
		for i := range evs {
			if !reflect.DeepEqual(got[i], evs[i]) {
				t.Errorf("limit %d, event %d:\n got %+v\nwant %+v", limit, i, got[i], evs[i])
			}
		}
		if limit < 1<<20 && len(frames) < 3 {
			t.Errorf("limit %d: %d frames, want the batch cut", limit, len(frames))
		}
	}
	v4, err := encodeFrame(evs)
	if err != nil {
		t.Fatal(err)
	}
	v3 := encodeV3(t, evs)
	if len(v4)*5 > len(v3)*4 {
		t.Errorf("a batch of warm turns takes %d bytes, %d in the format before: want at most four fifths", len(v4), len(v3))
	}
	t.Logf("three warm turns: %d bytes (%d in the format before)", len(v4), len(v3))
	rs, err := decodeFrame(v3)
	if err != nil || len(rs) != len(evs) {
		t.Fatalf("decodeFrame(SBR3) = %d events, %v", len(rs), err)
	}
	for i, r := range rs {
		if got, err := r.decode(); err != nil || !reflect.DeepEqual(got, evs[i]) {
			t.Errorf("SBR3 event %d: %+v, %v; want %+v", i, got, err, evs[i])
		}
	}
}
