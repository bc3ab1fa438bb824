package compaction

import (
	"strings"
	"testing"
	"time"
)

func TestFlushPromptsDefaults(t *testing.T) {
	now := time.Date(2026, 11, 25, 6, 5, 0, 0, time.UTC)
	user, sys := FlushPrompts("", "", now, nil)
	wantUser := "Pre-compaction memory flush. Store durable memories only in memory/2026-11-25.md (create memory/ if needed). " +
		"Treat workspace bootstrap/reference files such as MEMORY.md, DREAMS.md, SOUL.md, and AGENTS.md as read-only during this flush; never overwrite, replace, or edit them. " +
		"If memory/2026-11-25.md already exists, APPEND new content only and do not overwrite existing entries. " +
		"Do NOT create timestamped variant files (e.g., 2026-11-25-HHMM.md); always use the canonical 2026-11-25.md filename. " +
		"If nothing to store, reply with NO_REPLY.\n" +
		"Current time: Wednesday, November 25th, 2026 - 06:05 (UTC)\nReference UTC: 2026-11-25 06:05 UTC"
	if user != wantUser {
		t.Errorf("user prompt =\n%s\nwant\n%s", user, wantUser)
	}
	if !strings.HasPrefix(sys, FlushSystemMarker+" The session is near auto-compaction; capture durable memories to disk.") ||
		!strings.HasSuffix(sys, "You may reply, but usually NO_REPLY is correct.") || strings.Contains(sys, "YYYY") {
		t.Errorf("system prompt = %s", sys)
	}
	if got := FlushPath(now, nil); got != "memory/2026-11-25.md" {
		t.Errorf("FlushPath = %s", got)
	}
}

func TestFlushPromptsCustom(t *testing.T) {
	now := time.Date(2026, 1, 2, 23, 30, 0, 0, time.UTC)
	loc := time.FixedZone("X", 2*3600)
	user, sys := FlushPrompts("Save notes.", "Flush.", now, loc)
	for _, want := range []string{"Save notes.", "memory/2026-01-03.md", "APPEND new content only", "read-only during this flush",
		"If no user-visible reply is needed, start with NO_REPLY.", "Current time: Saturday, January 3rd, 2026 - 01:30 (X)", "Reference UTC: 2026-01-02 23:30 UTC"} {
		if !strings.Contains(user, want) {
			t.Errorf("custom user prompt lacks %q:\n%s", want, user)
		}
	}
	if !strings.HasPrefix(sys, "Flush.") || !strings.Contains(sys, "start with NO_REPLY") || strings.Contains(sys, "Current time") {
		t.Errorf("custom system prompt = %s", sys)
	}
	// A prompt that already names the token and has a time line is kept.
	user, _ = FlushPrompts("Reply NO_REPLY.\nCurrent time: earlier", "", now, nil)
	if strings.Count(user, "NO_REPLY") != 1 || strings.Count(user, "Current time:") != 1 {
		t.Errorf("prompt with token and time = %s", user)
	}
}

func TestFlushThreshold(t *testing.T) {
	for _, tc := range []struct{ window, reserve, soft, want int }{
		{100000, 0, 4000, 76000},      // threshold 80k, minus 4k
		{32768, 0, 4000, 20576},       // the reference's worked example
		{100000, 0, 0, 80000},         // no margin: the threshold
		{10000, 0, 9000, 7500 - 3750}, // margin capped at half of window-reserve
		{100000, 30000, 6000, 69000},
	} {
		if got := FlushThreshold(tc.window, tc.reserve, tc.soft); got != tc.want {
			t.Errorf("FlushThreshold(%d, %d, %d) = %d, want %d", tc.window, tc.reserve, tc.soft, got, tc.want)
		}
	}
}

func TestIsSilent(t *testing.T) {
	for in, want := range map[string]bool{
		"NO_REPLY": true, " no_reply\n": true, "NO_REPLY - nothing to store": true, "No_Reply": true,
		"": false, "NO": false, "Saved notes.": false, "I wrote NO_REPLY": false,
	} {
		if got := IsSilent(in); got != want {
			t.Errorf("IsSilent(%q) = %v, want %v", in, got, want)
		}
	}
}

// FuzzFlushPrompts: whatever prompt and system prompt the config holds, the
// flush prompts keep the safety hints and the silent token, and name no
// undated file.
func FuzzFlushPrompts(f *testing.F) {
	f.Add("", "")
	f.Add("Save notes to YYYY-MM-DD.md", "NO_REPLY")
	f.Add("Current time: x", "\n\n")
	now := time.Date(2026, 3, 4, 5, 6, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, prompt, system string) {
		user, sys := FlushPrompts(prompt, system, now, nil)
		for _, out := range []string{user, sys} {
			if !strings.Contains(out, SilentToken) || strings.Contains(out, "YYYY-MM-DD") ||
				!strings.Contains(out, "memory/2026-03-04.md already exists, APPEND new content only") ||
				!strings.Contains(out, "read-only during this flush") {
				t.Fatalf("FlushPrompts(%q, %q) = %q / %q", prompt, system, user, sys)
			}
		}
	})
}
