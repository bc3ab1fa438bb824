package gateway

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/subagent"
)

func TestTasksText(t *testing.T) {
	now := time.UnixMilli(1_000_000_000)
	ago := func(d time.Duration) int64 { return now.Add(-d).UnixMilli() }
	info := func(label, task, status string, created, started, ended int64, errText string) subagent.Info {
		return subagent.Info{Record: subagent.Record{Label: label, Task: task, CreatedAt: created},
			RunStatus: status, StartedAt: started, EndedAt: ended, Error: errText}
	}
	if got := tasksText(nil, false, now); got != "📋 Tasks\nTask runs: none active or recent for this session." {
		t.Errorf("no tasks: %q", got)
	}
	infos := []subagent.Info{
		info("", "count the files\nin the workspace", "running", ago(90*time.Second), ago(75*time.Second), 0, ""),
		info("", "later", "queued", ago(3*time.Second), 0, 0, ""),
		info("greeter", "say hi", "ok", ago(time.Hour), ago(time.Hour), ago(50*time.Minute), ""),
		info("", strings.Repeat("long task ", 20), "error", ago(2*time.Hour), ago(2*time.Hour), ago(2*time.Hour), "provider said no\nmore detail"),
		info("", "slow", "timeout", ago(3*time.Hour), ago(3*time.Hour), ago(170*time.Minute), "run timed out"),
		info("", "stopped", "aborted", ago(4*time.Hour), ago(4*time.Hour), ago(4*time.Hour), "aborted"),
	}
	want := strings.Join([]string{
		"📋 Tasks",
		"Current session: 2 active · 6 total",
		"",
		"1. 🟢 count the files …",
		"   Subagent · running · elapsed 1m 15s",
		"",
		"2. 🟡 later",
		"   Subagent · queued · queued 3s ago",
		"",
		"3. ✅ greeter",
		"   Subagent · succeeded · finished 50m ago",
		"",
		"4. 🔴 " + strings.Repeat("long task ", 8)[:79] + "…",
		"   Subagent · failed · finished 2h ago",
		"   provider said no …",
		"",
		"5. ⏱️ slow",
		"   Subagent · timed out · finished 2h 50m ago",
		"   run timed out",
		"",
		"+1 more recent task",
	}, "\n")
	if got := tasksText(infos, false, now); got != want {
		t.Errorf("tasksText =\n%s\nwant\n%s", got, want)
	}
	if got := tasksText(infos[:1], true, now); !strings.Contains(got, "Current session: 1 active · 1+ total") {
		t.Errorf("with more rows: %q", got)
	}
	var many []subagent.Info
	for i := range 8 {
		many = append(many, info(fmt.Sprint("t", i), "", "ok", ago(time.Minute), 0, ago(time.Minute), ""))
	}
	if got := tasksText(many, false, now); !strings.HasSuffix(got, "\n\n+3 more recent tasks") {
		t.Errorf("8 tasks: %q", got)
	}
}
