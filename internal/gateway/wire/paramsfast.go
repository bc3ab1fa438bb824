package wire

import (
	"encoding/json"
	"strconv"
)

// membersDecoder is a params type that fills itself from the members of a
// JSON object that passed its method's schema (decodeInto split them while
// validating), instead of json.Unmarshal parsing the object again. It
// reports false, having changed nothing, for any member it does not
// decode exactly as json.Unmarshal would; the caller then unmarshals.
type membersDecoder interface {
	decodeMembers(m map[string]json.RawMessage) bool
}

var _ membersDecoder = (*ChatSendParams)(nil)

// decodeMembers implements membersDecoder for chat.send, every turn's
// request. Its schema is closed, so m holds the properties it names only:
// those the struct has no field for are left out, as json.Unmarshal
// leaves them; attachments, and a timeoutMs that is no plain integer,
// are left to json.Unmarshal.
func (p *ChatSendParams) decodeMembers(m map[string]json.RawMessage) bool {
	q := *p
	for name, raw := range m {
		ok := true
		switch name {
		case "sessionKey":
			q.SessionKey, ok = jsonString(raw)
		case "message":
			q.Message, ok = jsonString(raw)
		case "idempotencyKey":
			q.IdempotencyKey, ok = jsonString(raw)
		case "agentId":
			q.AgentID, ok = jsonString(raw)
		case "sessionId":
			q.SessionID, ok = jsonString(raw)
		case "thinking":
			q.Thinking, ok = jsonString(raw)
		case "queueMode":
			q.QueueMode, ok = jsonString(raw)
		case "deliver":
			switch string(raw) {
			case "true":
				q.Deliver = true
			case "false":
				q.Deliver = false
			default:
				ok = false
			}
		case "timeoutMs":
			var n int64
			n, ok = jsonInt(raw)
			q.TimeoutMs = &n
		case "attachments":
			ok = false
		}
		if !ok {
			return false
		}
	}
	*p = q
	return true
}

// jsonString decodes raw, a JSON string, as json.Unmarshal does; false
// for any other value.
func jsonString(raw []byte) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	if s, ok := plainString(raw); ok {
		return s, true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// jsonInt decodes raw when it is a JSON integer within int64 written with
// digits only (an optional minus sign); false for anything else (a
// fraction or an exponent, which json.Unmarshal judges itself).
func jsonInt(raw []byte) (int64, bool) {
	if len(raw) == 0 || len(raw) > 20 {
		return 0, false
	}
	for i, c := range raw {
		if (c < '0' || c > '9') && !(i == 0 && c == '-') {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil
}
