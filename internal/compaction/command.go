package compaction

import (
	"strings"
	"unicode"

	"github.com/switchboardhq/switchboard/internal/policy"
)

// Chat command kinds.
const (
	CmdCompact = "compact"
	CmdNew     = "new"
	CmdReset   = "reset"
	// CmdContext is "/context [list|detail|map|json]".
	CmdContext = "context"
	// CmdHelp is "/help" (or "/commands"): the commands chat understands.
	CmdHelp = "help"
	// CmdStatus is "/status": the session's model, context, tokens,
	// queue and the gateway's version and uptime.
	CmdStatus = "status"
	// CmdModel is "/model [provider/model|default|list]": the session's
	// model, shown or chosen.
	CmdModel = "model"
	// CmdModels is "/models [provider]": the configured models.
	CmdModels = "models"
	// CmdStop is "/stop" (or a message that is only an abort word, see
	// policy.IsAbortTrigger): the session's runs and the sub-agents it
	// spawned are aborted, its queued messages dropped.
	CmdStop = "stop"
	// CmdWhoami is "/whoami" (alias "/id"): who the gateway takes the
	// sender for, as the channel's allowlists match them.
	CmdWhoami = "whoami"
	// CmdName is "/name [title]": the session's name (its label), shown
	// or set.
	CmdName = "name"
	// CmdTasks is "/tasks": the sub-agent runs the session spawned.
	CmdTasks = "tasks"
)

// Command is a parsed session command: /compact, /new, /reset, /context,
// /help, /status, /model, /models, /stop, /whoami, /name or /tasks.
type Command struct {
	Kind string
	// Soft is "/reset soft": the transcript is kept.
	Soft bool
	// Rest is the text after the command (and after "soft"): the
	// instructions of /compact, the model or first message of /new, the
	// first message of /reset, the arguments of /model, the title of /name.
	Rest string
}

// ParseCommand recognises a chat message that is one of the session
// commands: "/compact [instructions]", "/new [model|message]",
// "/reset [soft [message]]", "/context [list|detail|map|json]", "/help"
// (alias "/commands"), "/status", "/model [ref] [text]",
// "/models [provider]", "/stop", "/whoami" (alias "/id"), "/name
// [title]" and "/tasks". The
// command name is case-insensitive and must be the whole first word
// (policy.SplitCommand); anything else is not a command.
func ParseCommand(msg string) (Command, bool) {
	name, rest, ok := policy.SplitCommand(msg)
	if !ok {
		return Command{}, false
	}
	rest = strings.TrimSpace(rest)
	switch name {
	case CmdCompact, CmdNew, CmdContext, CmdHelp, CmdStatus, CmdModel, CmdModels, CmdName, CmdTasks:
		return Command{Kind: name, Rest: rest}, true
	case CmdStop:
		if rest != "" {
			return Command{}, false // "/stop doing that": a message
		}
		return Command{Kind: CmdStop}, true
	case "commands":
		return Command{Kind: CmdHelp, Rest: rest}, true
	case CmdWhoami, "id":
		return Command{Kind: CmdWhoami, Rest: rest}, true
	case CmdReset:
		c := Command{Kind: CmdReset, Rest: rest}
		word, after := cutSpace(rest)
		if strings.EqualFold(word, "soft") {
			c.Soft, c.Rest = true, strings.TrimSpace(after)
		}
		return c, true
	}
	return Command{}, false
}

// cutSpace splits s at its first run of white space.
func cutSpace(s string) (string, string) {
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimLeftFunc(s[i:], unicode.IsSpace)
}
