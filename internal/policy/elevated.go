package policy

import "strings"

// Elevated levels: a session's default for exec's elevated escape (the
// reference's /elevated directive and sessions.patch elevatedLevel). "on"
// and "ask" run elevated commands on the host behind exec approvals;
// "full" is accepted as well (its approvals are those of the host's
// exec policy).
const (
	ElevatedOff  = "off"
	ElevatedOn   = "on"
	ElevatedAsk  = "ask"
	ElevatedFull = "full"
)

// NormalizeElevatedLevel returns level's canonical form and whether it is
// one (case and surrounding space ignored).
func NormalizeElevatedLevel(level string) (string, bool) {
	switch l := lowerTrim(level); l {
	case ElevatedOff, ElevatedOn, ElevatedAsk, ElevatedFull:
		return l, true
	}
	return "", false
}

// ElevatedCommand is a parsed standalone "/elevated" (or "/elev")
// message.
type ElevatedCommand struct {
	// Show is set for a bare "/elevated": nothing changes.
	Show bool
	// Level is the new level.
	Level string
	// Raw is an argument that is not a level.
	Raw string
}

// ParseElevatedCommand reads a message that is only "/elevated" or
// "/elev", optionally with one level ("/elevated on", "/elev:full").
func ParseElevatedCommand(msg string) (ElevatedCommand, bool) {
	s := strings.TrimSpace(msg)
	var rest string
	switch {
	case hasPrefixFoldASCII(s, "/elevated"):
		rest = s[len("/elevated"):]
	case hasPrefixFoldASCII(s, "/elev"):
		rest = s[len("/elev"):]
	default:
		return ElevatedCommand{}, false
	}
	if rest != "" && rest[0] != ':' && rest[0] != ' ' && rest[0] != '\t' {
		return ElevatedCommand{}, false // "/elevator", "/elevate…": not this command
	}
	args := strings.Fields(strings.TrimPrefix(rest, ":"))
	switch len(args) {
	case 0:
		return ElevatedCommand{Show: true}, true
	case 1:
		if l, ok := NormalizeElevatedLevel(args[0]); ok {
			return ElevatedCommand{Level: l}, true
		}
		return ElevatedCommand{Raw: args[0]}, true
	}
	return ElevatedCommand{}, false // text after a level: an ordinary message
}

// systemMark prefixes the reference's directive acknowledgements.
const systemMark = "⚙️ "

// Reply is the reference's answer to c: the new level's acknowledgement,
// the current level with the options, or the unrecognized level.
func (c ElevatedCommand) Reply(current string) string {
	switch {
	case c.Raw != "":
		return `Unrecognized elevated level "` + c.Raw + `". Valid levels: off, on, ask, full.`
	case c.Show:
		return "Current elevated level: " + current + ".\nOptions: on, off, ask, full."
	}
	switch c.Level {
	case ElevatedOff:
		return systemMark + "Elevated mode disabled."
	case ElevatedFull:
		return systemMark + "Elevated mode set to full (auto-approve)."
	}
	return systemMark + "Elevated mode set to ask (approvals may still apply)."
}
