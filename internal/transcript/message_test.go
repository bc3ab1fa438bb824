package transcript

import (
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var testTime = time.Date(2026, 9, 6, 10, 15, 30, 123456789, time.FixedZone("CEST", 2*3600))

func nan() float64 { return math.NaN() }

func TestNewID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{16}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if !re.MatchString(id) {
			t.Fatalf("NewID() = %q", id)
		}
		if seen[id] {
			t.Fatalf("NewID() repeated %q", id)
		}
		seen[id] = true
	}
}

func TestConstructors(t *testing.T) {
	tests := []struct {
		name string
		e    Entry
		want string
	}{
		{"user", MessageEntry(NewUserMessage("hello", testTime), testTime),
			`{"type":"message","id":"","parentId":null,"timestamp":"2026-09-06T08:15:30.123Z","message":{"role":"user","content":[{"type":"text","text":"hello"}],"timestamp":1788682530123}}`},
		{"assistant", MessageEntry(NewAssistantMessage(nil, testTime), testTime),
			`{"type":"message","id":"","parentId":null,"timestamp":"2026-09-06T08:15:30.123Z","message":{"role":"assistant","content":[],"timestamp":1788682530123}}`},
		{"tool ok", MessageEntry(NewToolResult("call_1", "sessions_list", `{"count":0}`, json.RawMessage(`{"count":0}`), false, testTime), testTime),
			`{"type":"message","id":"","parentId":null,"timestamp":"2026-09-06T08:15:30.123Z","message":{"role":"toolResult","content":[{"type":"text","text":"{\"count\":0}"}],"timestamp":1788682530123,"toolCallId":"call_1","toolName":"sessions_list","details":{"count":0},"isError":false}}`},
		{"tool error", MessageEntry(NewToolResult("call_2", "x", "boom", nil, true, testTime), testTime),
			`{"type":"message","id":"","parentId":null,"timestamp":"2026-09-06T08:15:30.123Z","message":{"role":"toolResult","content":[{"type":"text","text":"boom"}],"timestamp":1788682530123,"toolCallId":"call_2","toolName":"x","isError":true}}`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(tt.e)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if d := jsonDiff(t, []byte(tt.want), got); d != "" {
			t.Errorf("%s: (-want +got):\n%s", tt.name, d)
		}
	}
	h := NewHeader("sid", testTime, "/ws")
	if d := cmp.Diff(Header{Type: "session", Version: HeaderVersion, ID: "sid", Timestamp: "2026-09-06T08:15:30.123Z", Cwd: "/ws"}, h); d != "" {
		t.Errorf("NewHeader (-want +got):\n%s", d)
	}
}

func TestText(t *testing.T) {
	var nilMsg *Message
	tests := []struct {
		name      string
		m         *Message
		text      string
		assistant string
	}{
		{"nil", nilMsg, "", ""},
		{"user string", &Message{Role: RoleUser, Content: StringContent(" hi ")}, " hi ", ""},
		{"assistant string", &Message{Role: RoleAssistant, Content: StringContent("x")}, "x", ""},
		{"assistant blocks", NewAssistantMessage([]Block{
			{Type: BlockThinking, Thinking: ptr("secret")},
			TextBlock("  Hi "),
			TextBlock("   "),
			ToolCallBlock("c", "t", nil),
			{Type: BlockText}, // nil text
			TextBlock("there\n"),
		}, testTime), "  Hi    there\n", "Hi there"},
		{"tool result", NewToolResult("c", "t", "out", nil, false, testTime), "out", ""},
	}
	for _, tt := range tests {
		if got := tt.m.Text(); got != tt.text {
			t.Errorf("%s: Text() = %q, want %q", tt.name, got, tt.text)
		}
		if got := AssistantText(tt.m); got != tt.assistant {
			t.Errorf("%s: AssistantText() = %q, want %q", tt.name, got, tt.assistant)
		}
	}
}

func TestContentText(t *testing.T) {
	img := Block{Type: BlockImage, Data: "AAAA", MimeType: "image/png"}
	for _, tt := range []struct {
		name string
		c    Content
		want string
	}{
		{"string", StringContent("plain"), "plain"},
		{"no blocks", BlockContent(), ""},
		{"image only", BlockContent(img), ""},
		{"one text block", BlockContent(img, TextBlock("one")), "one"},
		{"text blocks joined", BlockContent(TextBlock("a"), img, TextBlock("b"), TextBlock("c")), "abc"},
		{"tool call skipped", BlockContent(TextBlock("x"), Block{Type: BlockToolCall, ID: "1", Name: "n"}), "x"},
	} {
		if got := tt.c.Text(); got != tt.want {
			t.Errorf("%s: Text() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func BenchmarkContentTextOneBlock(b *testing.B) {
	c := BlockContent(TextBlock(strings.Repeat("a line of a model reply\n", 40)))
	b.ReportAllocs()
	for b.Loop() {
		if c.Text() == "" {
			b.Fatal("empty")
		}
	}
}
