package gateway

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/subagent"
)

// maxTaskRows is how many sub-agent runs /tasks reads (the newest first),
// and maxVisibleTasks how many it shows, as the reference does.
const (
	maxTaskRows     = 200
	maxVisibleTasks = 5
)

// tasksCommand answers /tasks: the sub-agent runs the session spawned,
// newest first, with their state (the reference's "📋 Tasks" answer).
func (s *Server) tasksCommand(ctx context.Context, cmd admission.Command) (string, error) {
	var reply string
	switch {
	case cmd.Session.Rest != "":
		reply = "Usage: /tasks"
	case s.cfg.Subagents == nil:
		reply = tasksText(nil, false, s.now())
	default:
		infos, more, err := s.cfg.Subagents.List(ctx, cmd.SessionKey, false, maxTaskRows)
		if err != nil {
			return "", fmt.Errorf("gateway: /tasks: %w", err)
		}
		reply = tasksText(infos, more, s.now())
	}
	if err := s.Reply(ctx, cmd.SessionKey, cmd.RunID, reply); err != nil {
		return "", err
	}
	return reply, nil
}

// tasksText is the /tasks answer for a session's sub-agent runs (newest
// first; more: there were more than infos).
func tasksText(infos []subagent.Info, more bool, now time.Time) string {
	if len(infos) == 0 {
		return "📋 Tasks\nTask runs: none active or recent for this session."
	}
	active := 0
	for _, in := range infos {
		if in.RunStatus == "queued" || in.RunStatus == "running" {
			active++
		}
	}
	total := fmt.Sprint(len(infos))
	if more {
		total += "+"
	}
	lines := []string{"📋 Tasks", fmt.Sprintf("Current session: %d active · %s total", active, total), ""}
	for i, in := range infos[:min(len(infos), maxVisibleTasks)] {
		if i > 0 {
			lines = append(lines, "")
		}
		icon, status := taskStatus(in.RunStatus)
		lines = append(lines, fmt.Sprintf("%d. %s %s", i+1, icon, taskTitle(in)), "   Subagent · "+status+" · "+taskTiming(in, status, now))
		if in.Error != "" && (status == "failed" || status == "timed out") {
			lines = append(lines, "   "+oneLine(in.Error, 120))
		}
	}
	if hidden := len(infos) - maxVisibleTasks; hidden > 0 {
		s := "s"
		if hidden == 1 {
			s = ""
		}
		lines = append(lines, "", fmt.Sprintf("+%d more recent task%s", hidden, s))
	}
	return strings.Join(lines, "\n")
}

// taskStatus is a run status as /tasks shows it: its icon and the
// reference's word.
func taskStatus(runStatus string) (icon, status string) {
	switch runStatus {
	case "queued":
		return "🟡", "queued"
	case "running":
		return "🟢", "running"
	case "ok":
		return "✅", "succeeded"
	case "timeout":
		return "⏱️", "timed out"
	case "aborted":
		return "⚪️", "cancelled"
	case "error":
		return "🔴", "failed"
	}
	return "⚠️", "lost"
}

// taskTitle is a run's label, else its task's first line, shortened.
func taskTitle(in subagent.Info) string {
	return oneLine(subagent.TaskLabel(in.Label, in.Task), 80)
}

// taskTiming is how long a run has run, waited, or since it ended.
func taskTiming(in subagent.Info, status string, now time.Time) string {
	since := func(ms int64) string { return roughDuration(now.Sub(time.UnixMilli(ms))) }
	switch status {
	case "running":
		return "elapsed " + since(max(in.StartedAt, in.CreatedAt))
	case "queued":
		return "queued " + since(in.CreatedAt) + " ago"
	}
	return "finished " + since(max(in.EndedAt, in.StartedAt, in.CreatedAt)) + " ago"
}

// oneLine is s's first line cut to at most n runes (firstLine), with
// " …" when more lines follow and the line was not cut.
func oneLine(s string, n int) string {
	line, cut := firstLine(s, n)
	if !cut && len(line) < len(strings.TrimSpace(s)) {
		return line + " …"
	}
	return line
}
