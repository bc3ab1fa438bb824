package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progress reports a waited run's stages on stderr, one line each, when
// stderr is a terminal; when it is not (piped, redirected) it writes
// nothing, so scripts see only the reply.
type progress struct {
	w     io.Writer // nil: off
	start time.Time
	now   func() time.Time
	// before, when set, runs before each line: the waiter ends its reply
	// line there, so that a stage line never runs into the reply when
	// stdout and stderr are the same terminal.
	before func()
}

func (p *progress) line(format string, args ...any) {
	if p == nil || p.w == nil {
		return
	}
	if p.before != nil {
		p.before()
	}
	fmt.Fprintf(p.w, "· "+format+"\n", args...)
}

// event reports the stages an agent event of the run marks: the run
// starting after a wait in the queue, and each tool call.
func (p *progress) event(ev *wire.AgentEvent) {
	if p == nil || p.w == nil {
		return
	}
	var d struct {
		Phase string `json:"phase"`
		Name  string `json:"name"`
	}
	json.Unmarshal(ev.Data, &d)
	switch {
	case ev.Stream == "lifecycle" && d.Phase == "start":
		p.line("running")
	case ev.Stream == "tool" && d.Phase == "start":
		p.line("tool %s", d.Name)
	}
}

// done reports how the run ended, with its tokens and time.
func (p *progress) done(state string, usage json.RawMessage) {
	if p == nil || p.w == nil {
		return
	}
	var u struct {
		TotalTokens int64 `json:"totalTokens"`
	}
	json.Unmarshal(usage, &u)
	took := p.now().Sub(p.start).Round(time.Millisecond)
	if u.TotalTokens > 0 {
		p.line("%s in %v, %d tokens", state, took, u.TotalTokens)
	} else {
		p.line("%s in %v", state, took)
	}
}
