package store

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/transcript"
)

// RunStats counts a run's transcript messages the way the reference's
// usage summaries do: user and assistant messages, the tool calls of the
// assistant messages (in all and by tool name), tool results, and errors
// (assistant messages that stopped on an error, an abort or a timeout,
// and tool results marked as errors). FinishRun computes it from the
// messages the run wrote and keeps it with the run.
type RunStats struct {
	User        int64            `json:"user,omitempty"`
	Assistant   int64            `json:"assistant,omitempty"`
	ToolCalls   int64            `json:"toolCalls,omitempty"`
	ToolResults int64            `json:"toolResults,omitempty"`
	Errors      int64            `json:"errors,omitempty"`
	Tools       map[string]int64 `json:"tools,omitempty"`
}

// errorStopReasons are the stop reasons counted as errors.
var errorStopReasons = [...]string{"error", "aborted", "timeout"}

// errorStops reports whether a stop reason is counted as an error.
func errorStops(reason string) bool {
	return slices.Contains(errorStopReasons[:], reason)
}

// errorStop reports whether a line may carry an error stop reason.
func errorStop(line []byte) bool {
	for _, stop := range errorStopReasons {
		if bytes.Contains(line, []byte(`"stopReason":"`+stop+`"`)) {
			return true
		}
	}
	return false
}

// CountLine is Count of a line held as a string: it copies the line to
// decode it only when it may hold a tool call or an error (a warm turn's
// reply does not).
func (s *RunStats) CountLine(role, line string) {
	switch {
	case role == transcript.RoleAssistant && !strings.Contains(line, `"toolCall"`) && !errorStopLine(line):
		s.Assistant++
	case (role == transcript.RoleToolResult || role == transcript.RoleTool) && !strings.Contains(line, `"isError":true`):
		s.ToolResults++
	case role == transcript.RoleAssistant || role == transcript.RoleToolResult || role == transcript.RoleTool:
		s.Count(role, []byte(line))
	default:
		s.Count(role, nil) // counted by its role alone
	}
}

// errorStopLine is errorStop of a line held as a string.
func errorStopLine(line string) bool {
	for _, stop := range errorStopReasons {
		if strings.Contains(line, `"stopReason":"`+stop+`"`) {
			return true
		}
	}
	return false
}

// Count adds one transcript entry: role is its message role ("" for other
// entries) and line its stored JSON line, which is read only for
// assistant messages and tool results.
func (s *RunStats) Count(role string, line []byte) {
	switch role {
	case transcript.RoleUser:
		s.User++
		return
	case transcript.RoleAssistant, transcript.RoleToolResult, transcript.RoleTool:
	default:
		return
	}
	// Most entries need no decoding: a stored line is compact JSON, where
	// these keys can only appear as keys (a quote inside a string value is
	// escaped), so a line without them has no tool call or error.
	if role == transcript.RoleAssistant && !bytes.Contains(line, []byte(`"toolCall"`)) && !errorStop(line) {
		s.Assistant++
		return
	}
	if role != transcript.RoleAssistant && !bytes.Contains(line, []byte(`"isError":true`)) {
		s.ToolResults++
		return
	}
	var e struct {
		Message struct {
			StopReason string `json:"stopReason"`
			IsError    bool   `json:"isError"`
			Content    json.RawMessage
		} `json:"message"`
	}
	_ = json.Unmarshal(line, &e) // an unreadable line still counts by role
	if role != transcript.RoleAssistant {
		s.ToolResults++
		if e.Message.IsError {
			s.Errors++
		}
		return
	}
	s.Assistant++
	if errorStops(e.Message.StopReason) {
		s.Errors++
	}
	var blocks []struct{ Type, Name string }
	if json.Unmarshal(e.Message.Content, &blocks) != nil {
		return // plain string content: no tool calls
	}
	for _, b := range blocks {
		if b.Type != transcript.BlockToolCall {
			continue
		}
		s.ToolCalls++
		if s.Tools == nil {
			s.Tools = map[string]int64{}
		}
		s.Tools[b.Name]++
	}
}

// RunUsage is one finished run's usage and message counts.
type RunUsage struct {
	RunID      string
	SessionKey string
	AgentID    string
	EndedAt    time.Time
	Usage      transcript.Usage
	Stats      RunStats
}

// RunUsageFilter selects the finished runs RunsUsage returns: those that
// ended in [From, To), of one agent or session when set, at most Limit
// (0: MaxRunsUsage), oldest end first.
type RunUsageFilter struct {
	From, To   time.Time
	AgentID    string
	SessionKey string
	Limit      int
}

// MaxRunsUsage bounds one RunsUsage answer.
const MaxRunsUsage = 200_000
