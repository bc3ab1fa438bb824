package agent

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// chatInput is an input as chat.send makes it.
func chatInput() Input {
	return Input{
		RunID: "run-1", SessionKey: "agent:main:main", AgentID: "main", Message: "hello <b>there</b> & \"you\"",
		IdempotencyKey: "run-1:user", Channel: "internal", Timeout: 90 * time.Second,
		Chain: &tools.Chain{ID: "run-1", Path: []string{"agent:main:main"}},
	}
}

// TestStoredInputIsTheRoundTrip: the input an opened run executes is the
// input decoded from what Enqueue stored, whether it is copied (plain
// inputs: the stored JSON is then not read at all) or decoded.
func TestStoredInputIsTheRoundTrip(t *testing.T) {
	maxLines := 3
	cases := []struct {
		name   string
		mutate func(in *Input)
		copied bool
	}{
		{"chat.send", func(*Input) {}, true},
		{"no chain", func(in *Input) { in.Chain = nil }, true},
		{"empty chain path", func(in *Input) { in.Chain.Path = []string{} }, true},
		{"announce", func(in *Input) {
			in.Lane, in.QueueKeep, in.Step = "announce", true, true
			in.Provenance = &Provenance{Kind: "inter_session", SourceSessionKey: "agent:main:subagent:x", SourceTool: "subagent_announce"}
			in.Chain = &tools.Chain{ID: "c", Hops: 2, Path: []string{"a", "b"}, Span: "s", Untrusted: "u"}
		}, true},
		{"queue settings", func(in *Input) {
			in.QueueMode, in.QueueCap, in.QueueDrop, in.QueueDebounceMs = "collect", 5, "summarize", 200
			in.To, in.AccountID, in.ThreadID, in.Label, in.SpawnedBy = "to", "acct", "th", "label", "agent:main:main"
			in.ExtraSystemPrompt, in.Model, in.Thinking = "extra", "scripted/echo-1", "high"
		}, true},
		{"session set", func(in *Input) { in.Session = &store.Session{Key: "agent:main:main"} }, true},
		{"invalid UTF-8", func(in *Input) { in.Message = "bad \xff byte" }, false},
		{"invalid UTF-8 in the chain", func(in *Input) { in.Chain.Path = []string{"\xfe"} }, false},
		{"source keys", func(in *Input) {
			in.Provenance = &Provenance{Kind: "inter_session", SourceSessionKeys: []string{}}
		}, false},
		{"images", func(in *Input) { in.Images = []provider.Image{{MimeType: "image/png", Data: "AAAA"}} }, false},
		{"sampling", func(in *Input) { in.Sampling = &provider.Sampling{MaxTokens: 10} }, false},
		{"client tools", func(in *Input) {
			in.ClientTools = []provider.ToolDef{{Name: "x", Parameters: json.RawMessage(`{ "type": "object" }`)}}
		}, false},
		{"compaction", func(in *Input) { in.Compact = &CompactInput{MaxLines: &maxLines} }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := chatInput()
			tc.mutate(&in)
			raw, err := json.Marshal(&in)
			if err != nil {
				t.Fatal(err)
			}
			var want Input
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			if plainInput(&in) != tc.copied {
				t.Fatalf("plainInput = %v, want %v", !tc.copied, tc.copied)
			}
			stored := raw
			if tc.copied {
				stored = []byte("not read") // a copy reads nothing
			}
			got, err := storedInput(&in, stored)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("stored input\n got %+v\nwant %+v", got, want)
			}
			if got.Chain != nil && in.Chain != nil && (got.Chain == in.Chain || len(got.Chain.Path) > 0 && &got.Chain.Path[0] == &in.Chain.Path[0]) {
				t.Error("the run's chain shares memory with the caller's input")
			}
		})
	}
}

// TestInputFieldsKnown fails when Input gains a field: plainInput must then
// say whether the field survives the JSON round trip as it is, and this
// list be updated.
func TestInputFieldsKnown(t *testing.T) {
	known := []string{"RunID", "SessionKey", "AgentID", "Message", "Lane", "Provenance", "Chain", "IdempotencyKey",
		"ExtraSystemPrompt", "Model", "Thinking", "Images", "Sampling", "ClientTools", "Timeout", "Channel", "To",
		"AccountID", "ThreadID", "QueueMode", "QueueCap", "QueueDrop", "QueueDebounceMs", "QueueKeep", "Carries", "Step",
		"Compact", "Label", "SpawnedBy", "Session"}
	check := func(typ reflect.Type, want []string) {
		var got []string
		for f := range typ.Fields() {
			got = append(got, f.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s fields %v, plainInput knows %v", typ, got, want)
		}
	}
	check(reflect.TypeFor[Input](), known)
	check(reflect.TypeFor[Provenance](), []string{"Kind", "SourceSessionKey", "SourceChannel", "SourceTool", "SourceSessionKeys"})
	check(reflect.TypeFor[tools.Chain](), []string{"ID", "Hops", "Path", "Span", "Untrusted"})
}

// BenchmarkStoredInput: the input of a warm chat.send turn, copied (what
// an opened run does) against decoded from its JSON (what it did).
func BenchmarkStoredInput(b *testing.B) {
	in := chatInput()
	raw, _ := json.Marshal(&in)
	b.Run("copy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := storedInput(&in, raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var run Input
			if err := json.Unmarshal(raw, &run); err != nil {
				b.Fatal(err)
			}
		}
	})
}
