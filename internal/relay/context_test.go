package relay

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/tools/sessions"
)

func TestAgentToAgentContextLines(t *testing.T) {
	s := sessions.Flow{TargetKey: "agent:ops:desk", DisplayKey: "agent:ops:desk", Message: "status?", RequesterKey: "agent:main:main"}
	tests := []struct {
		name, got, want string
	}{
		{"message context", sessions.A2AMessageContext("agent:main:main", "webchat", "agent:ops:desk"),
			"Agent-to-agent message context:\n" +
				"Agent 1 (requester) session: agent:main:main.\n" +
				"Agent 1 (requester) channel: webchat.\n" +
				"Agent 2 (target) session: agent:ops:desk."},
		{"message context without requester", sessions.A2AMessageContext("", "", "main"),
			"Agent-to-agent message context:\nAgent 2 (target) session: main."},
		{"reply step, requester's turn", replyContext(1, 5, true, s, "webchat", "unknown"),
			"Agent-to-agent reply step:\n" +
				"Current agent: Agent 1 (requester).\n" +
				"Turn 1 of 5.\n" +
				"Agent 1 (requester) session: agent:main:main.\n" +
				"Agent 1 (requester) channel: webchat.\n" +
				"Agent 2 (target) session: agent:ops:desk.\n" +
				"Agent 2 (target) channel: unknown.\n" +
				`If you want to stop the ping-pong, reply exactly "REPLY_SKIP".`},
		{"reply step, target's turn", replyContext(2, 5, false, s, "webchat", "discord"),
			"Agent-to-agent reply step:\n" +
				"Current agent: Agent 2 (target).\n" +
				"Turn 2 of 5.\n" +
				"Agent 1 (requester) session: agent:main:main.\n" +
				"Agent 1 (requester) channel: webchat.\n" +
				"Agent 2 (target) session: agent:ops:desk.\n" +
				"Agent 2 (target) channel: discord.\n" +
				`If you want to stop the ping-pong, reply exactly "REPLY_SKIP".`},
		{"announce step", announceContext(s, "webchat", "unknown", "all good", "thanks"),
			"Agent-to-agent announce step:\n" +
				"Agent 1 (requester) session: agent:main:main.\n" +
				"Agent 1 (requester) channel: webchat.\n" +
				"Agent 2 (target) session: agent:ops:desk.\n" +
				"Agent 2 (target) channel: unknown.\n" +
				"Original request: status?\n" +
				"Round 1 reply: all good\n" +
				"Latest reply: thanks\n" +
				`If you want to remain silent, reply exactly "ANNOUNCE_SKIP".` + "\n" +
				"Any other reply will be posted to the target channel.\n" +
				"After this reply, the agent-to-agent conversation is over."},
		{"announce step without replies", announceContext(s, "", "unknown", "", ""),
			"Agent-to-agent announce step:\n" +
				"Agent 1 (requester) session: agent:main:main.\n" +
				"Agent 2 (target) session: agent:ops:desk.\n" +
				"Agent 2 (target) channel: unknown.\n" +
				"Original request: status?\n" +
				"Round 1 reply: (not available).\n" +
				"Latest reply: (not available).\n" +
				`If you want to remain silent, reply exactly "ANNOUNCE_SKIP".` + "\n" +
				"Any other reply will be posted to the target channel.\n" +
				"After this reply, the agent-to-agent conversation is over."},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tt.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	if AnnounceStepMessage != "Agent-to-agent announce step." {
		t.Errorf("announce message = %q", AnnounceStepMessage)
	}
}
