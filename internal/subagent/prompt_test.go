package subagent

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestChildTaskMessage(t *testing.T) {
	tests := []struct {
		name        string
		depth, max  int
		sessionMode bool
		task        string
		want        string
	}{
		{
			name: "run mode", depth: 1, max: 1, task: "Summarise the logs",
			want: "[Subagent Context] You are running as a subagent (depth 1/1). Results auto-announce to your requester; do not busy-poll for status.\n" +
				"\n" +
				"[Subagent Task]: Summarise the logs",
		},
		{
			name: "session mode", depth: 2, max: 3, sessionMode: true, task: "Follow the thread",
			want: "[Subagent Context] You are running as a subagent (depth 2/3). Results auto-announce to your requester; do not busy-poll for status.\n" +
				"\n" +
				"[Subagent Context] This subagent session is persistent and remains available for thread follow-up messages.\n" +
				"\n" +
				"[Subagent Task]: Follow the thread",
		},
		{
			name: "task verbatim", depth: 1, max: 2, task: "line one\n  line two ",
			want: "[Subagent Context] You are running as a subagent (depth 1/2). Results auto-announce to your requester; do not busy-poll for status.\n" +
				"\n" +
				"[Subagent Task]: line one\n  line two ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ChildTaskMessage(tt.depth, tt.max, tt.sessionMode, tt.task)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ChildTaskMessage mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSpawnNote(t *testing.T) {
	const runNote = "Auto-announce is push-based. After spawning children, do NOT call sessions_list, sessions_history, exec sleep, or any polling tool. Wait for completion events to arrive as user messages, track expected child session keys, and only send your final answer after ALL expected completions arrive. If a child completion event arrives AFTER your final answer, reply ONLY with NO_REPLY."
	const sessionNote = "thread-bound session stays active after this task; continue in-thread for follow-ups."
	tests := []struct {
		name                string
		sessionMode, isCron bool
		want                string
	}{
		{"run", false, false, runNote},
		{"run from cron", false, true, ""},
		{"session", true, false, sessionNote},
		{"session from cron", true, true, sessionNote},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SpawnNote(tt.sessionMode, tt.isCron); got != tt.want {
				t.Errorf("SpawnNote(%v, %v) = %q, want %q", tt.sessionMode, tt.isCron, got, tt.want)
			}
		})
	}
}

// section returns the lines of the "## <name>" section of a prompt (heading
// excluded, up to the next blank line), and whether it exists.
func section(prompt, name string) ([]string, bool) {
	lines := strings.Split(prompt, "\n")
	for i, l := range lines {
		if l != "## "+name {
			continue
		}
		var out []string
		for _, l := range lines[i+1:] {
			if l == "" {
				break
			}
			out = append(out, l)
		}
		return out, true
	}
	return nil, false
}

func TestChildSystemPromptStructure(t *testing.T) {
	p := ChildSystemPrompt(PromptParams{
		Task: "  Find\tthe   flaky\n\ntests  ", Label: "flaky hunt",
		RequesterKey: "agent:main:main", RequesterChannel: "discord",
		ChildKey: "agent:main:subagent:0b9e", ChildDepth: 1, MaxSpawnDepth: 1,
	})
	if !strings.HasPrefix(p, "# Subagent Context\n\nYou are a **subagent** spawned by the main agent") {
		t.Errorf("prompt does not open with the heading and role line:\n%s", p)
	}
	if !strings.HasSuffix(p, "\n") || strings.HasSuffix(p, "\n\n") {
		t.Errorf("prompt should end with exactly one newline: %q", p[len(p)-20:])
	}
	if !strings.Contains(p, "Find the flaky tests\n") {
		t.Errorf("task whitespace not collapsed:\n%s", p)
	}
	if strings.Contains(p, "parent orchestrator") {
		t.Errorf("depth-1 prompt mentions the parent orchestrator:\n%s", p)
	}
	// Sections in order.
	last := -1
	for _, h := range []string{"## Your Role", "## Rules", "## Output Format", "## What You DON'T Do", "## Session Context"} {
		i := strings.Index(p, "\n"+h+"\n")
		if i < 0 {
			t.Errorf("missing %q", h)
			continue
		}
		if i < last {
			t.Errorf("%q out of order", h)
		}
		last = i
	}
	rules, _ := section(p, "Rules")
	for _, want := range []string{"Stay focused", "main agent automatically", "heartbeats", "ephemeral", "push-based completion", "compacted"} {
		if !strings.Contains(strings.Join(rules, "\n"), want) {
			t.Errorf("rules lack %q:\n%s", want, strings.Join(rules, "\n"))
		}
	}
	ctx, _ := section(p, "Session Context")
	want := []string{
		"- Label: flaky hunt",
		"- Requester session: agent:main:main.",
		"- Requester channel: discord.",
		"- Your session: agent:main:subagent:0b9e.",
	}
	if diff := cmp.Diff(want, ctx); diff != "" {
		t.Errorf("Session Context mismatch (-want +got):\n%s", diff)
	}
	if !strings.HasSuffix(p, "\n## Session Context\n"+strings.Join(want, "\n")+"\n") {
		t.Errorf("Session Context is not the last section:\n%s", p)
	}
}

func TestChildSystemPromptOptionalContextLines(t *testing.T) {
	p := ChildSystemPrompt(PromptParams{Task: "x", ChildKey: "agent:ops:subagent:1"})
	ctx, _ := section(p, "Session Context")
	if diff := cmp.Diff([]string{"- Your session: agent:ops:subagent:1."}, ctx); diff != "" {
		t.Errorf("Session Context mismatch (-want +got):\n%s", diff)
	}
	p = ChildSystemPrompt(PromptParams{Task: "x", RequesterKey: "main", ChildKey: "k"})
	ctx, _ = section(p, "Session Context")
	if diff := cmp.Diff([]string{"- Requester session: main.", "- Your session: k."}, ctx); diff != "" {
		t.Errorf("Session Context mismatch (-want +got):\n%s", diff)
	}
}

func TestChildSystemPromptTaskPlaceholder(t *testing.T) {
	p := ChildSystemPrompt(PromptParams{Task: " \n\t", ChildKey: "k"})
	if !strings.Contains(p, "{{TASK_DESCRIPTION}}") {
		t.Errorf("blank task should use the placeholder:\n%s", p)
	}
}

func TestChildSystemPromptSpawning(t *testing.T) {
	tests := []struct {
		name                  string
		depth, max            int
		wantParent            string
		wantSection, canSpawn bool
	}{
		{"default leaf", 1, 1, "main agent", false, false},
		{"zero values are depth 1 of 1", 0, 0, "main agent", false, false},
		{"orchestrator", 1, 2, "main agent", true, true},
		{"nested orchestrator", 2, 3, "parent orchestrator", true, true},
		{"nested leaf", 2, 2, "parent orchestrator", true, false},
		{"deep leaf", 5, 5, "parent orchestrator", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ChildSystemPrompt(PromptParams{Task: "t", ChildKey: "k", ChildDepth: tt.depth, MaxSpawnDepth: tt.max})
			if !strings.Contains(p, "You are a **subagent** spawned by the "+tt.wantParent) {
				t.Errorf("role line does not name the %s:\n%s", tt.wantParent, p)
			}
			body, ok := section(p, "Sub-Agent Spawning")
			if ok != tt.wantSection {
				t.Fatalf("Sub-Agent Spawning present = %v, want %v:\n%s", ok, tt.wantSection, p)
			}
			if !ok {
				return
			}
			text := strings.Join(body, "\n")
			if can := strings.Contains(text, "You CAN spawn") && strings.Contains(text, "sessions_spawn"); can != tt.canSpawn {
				t.Errorf("can-spawn text = %v, want %v:\n%s", can, tt.canSpawn, text)
			}
			if leaf := strings.Contains(text, "leaf worker and CANNOT spawn"); leaf == tt.canSpawn {
				t.Errorf("leaf text = %v, want %v:\n%s", leaf, !tt.canSpawn, text)
			}
			if i, j := strings.Index(p, "## Sub-Agent Spawning"), strings.Index(p, "## Session Context"); i > j {
				t.Errorf("Sub-Agent Spawning should precede Session Context")
			}
		})
	}
}
