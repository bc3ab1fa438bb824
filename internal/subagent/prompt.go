package subagent

import (
	"strconv"
	"strings"
)

// PromptParams describes the child run a system prompt is built for.
type PromptParams struct {
	// Task is the sessions_spawn task; whitespace runs are collapsed to one
	// space. Blank → the placeholder "{{TASK_DESCRIPTION}}" (as the reference).
	Task string
	// Label is the optional spawn label; blank → no "- Label:" line.
	Label string
	// RequesterKey is the requester's internal session key; blank → no
	// "- Requester session:" line.
	RequesterKey string
	// RequesterChannel is the requester origin's channel; blank → no
	// "- Requester channel:" line.
	RequesterChannel string
	// ChildKey is the child's own session key (always printed).
	ChildKey string
	// ChildDepth is the spawn depth of the child (1 = spawned by a main
	// session, 2 = spawned by a sub-agent, …). ≤0 is treated as 1.
	ChildDepth int
	// MaxSpawnDepth is agents.defaults.subagents.maxSpawnDepth. ≤0 is treated
	// as the default, 1.
	MaxSpawnDepth int
}

// ChildSystemPrompt returns the extra system prompt of a spawned child run
// (docs/spec/reference-behaviour.md §9.6), a Markdown document headed "# Subagent Context".
//
// The parent is called "main agent" for depth 1 and "parent orchestrator" for
// depth ≥2. A "## Sub-Agent Spawning" section appears when the child may
// spawn (ChildDepth < MaxSpawnDepth) and, as leaf text, for children of depth
// ≥2 that may not; a depth-1 leaf (the default configuration) gets none.
// The "## Session Context" lines are exact reference text; the rest is
// Switchboard's own wording of the same rules, which the reference does not
// test verbatim. The result ends with a newline.
func ChildSystemPrompt(p PromptParams) string {
	task := strings.Join(strings.Fields(p.Task), " ")
	if task == "" {
		task = "{{TASK_DESCRIPTION}}"
	}
	depth := p.ChildDepth
	if depth <= 0 {
		depth = 1
	}
	maxDepth := p.MaxSpawnDepth
	if maxDepth <= 0 {
		maxDepth = 1
	}
	canSpawn := depth < maxDepth
	parent := "main agent"
	if depth >= 2 {
		parent = "parent orchestrator"
	}

	lines := []string{
		"# Subagent Context",
		"",
		"You are a **subagent** spawned by the " + parent + " to carry out one specific task.",
		"",
		"## Your Role",
		"- Your task: " + task,
		"- Finishing this task is your whole job.",
		"- You are not the " + parent + "; do not act as if you were.",
		"",
		"## Rules",
		"1. **Stay focused** - work only on the task you were given.",
		"2. **Finish the task** - your final message is reported to the " + parent + " automatically.",
		"3. **Do not initiate** - no heartbeats, no unprompted actions, no side quests.",
		"4. **Be ephemeral** - this session may be ended once the task is done, and that is expected.",
		"5. **Trust push-based completion** - results of anything you spawn are announced back to you; never busy-poll for status.",
		"6. **Recover from compacted output** - if earlier tool output shows it was compacted or truncated, assume it was cut; re-read only what you need in small pieces (offsets, limits, targeted searches) instead of dumping whole files again.",
		"",
		"## Output Format",
		"Make your final response cover:",
		"- what you did or found,",
		"- any details the " + parent + " needs to act on it,",
		"- and keep it short but complete.",
		"",
		"## What You DON'T Do",
		"- NO conversations with the user (that is the " + parent + "'s job).",
		"- NO external messages (email, posts, chats) unless the task names a specific recipient or channel.",
		"- NO cron jobs or persistent state.",
		"- NO pretending to be the " + parent + ".",
		"- Reply in plain text and let the " + parent + " deliver it; use a messaging tool only when explicitly told to contact a specific external recipient.",
		"",
	}

	switch {
	case canSpawn:
		lines = append(lines,
			"## Sub-Agent Spawning",
			"You CAN spawn sub-agents of your own with `sessions_spawn` for parallel or complex work (you are at depth "+
				strconv.Itoa(depth)+"; the maximum is "+strconv.Itoa(maxDepth)+").",
			"Their results are announced back to you automatically, not to the main agent.",
			"Spawn the work, keep orchestrating, and wait for the completion announcements; do not poll `sessions_list` or `sessions_history` in a loop.",
			"Combine their results before you report back.",
			"",
		)
	case depth >= 2:
		lines = append(lines,
			"## Sub-Agent Spawning",
			"You are a leaf worker and CANNOT spawn further sub-agents. Concentrate on your assigned task.",
			"",
		)
	}

	lines = append(lines, "## Session Context")
	if p.Label != "" {
		lines = append(lines, "- Label: "+p.Label)
	}
	if p.RequesterKey != "" {
		lines = append(lines, "- Requester session: "+p.RequesterKey+".")
	}
	if p.RequesterChannel != "" {
		lines = append(lines, "- Requester channel: "+p.RequesterChannel+".")
	}
	lines = append(lines, "- Your session: "+p.ChildKey+".", "")
	return strings.Join(lines, "\n")
}

// ChildTaskMessage returns the user message that starts a spawned child run
// (docs/spec/reference-behaviour.md §9.3 step 16): the depth line, in session mode the persistence
// line, then "[Subagent Task]: <task>", separated by blank lines. task is
// used as given.
func ChildTaskMessage(depth, maxDepth int, sessionMode bool, task string) string {
	parts := []string{
		"[Subagent Context] You are running as a subagent (depth " + strconv.Itoa(depth) + "/" +
			strconv.Itoa(maxDepth) + "). Results auto-announce to your requester; do not busy-poll for status.",
	}
	if sessionMode {
		parts = append(parts, "[Subagent Context] This subagent session is persistent and remains available for thread follow-up messages.")
	}
	parts = append(parts, "[Subagent Task]: "+task)
	return strings.Join(parts, "\n\n")
}

// Notes returned in an accepted sessions_spawn result (docs/spec/reference-behaviour.md §9.3 step 20).
const (
	// SpawnAcceptedNote is the note of a run-mode spawn by a non-cron requester.
	SpawnAcceptedNote = "Auto-announce is push-based. After spawning children, do NOT call sessions_list, sessions_history, exec sleep, or any polling tool. Wait for completion events to arrive as user messages, track expected child session keys, and only send your final answer after ALL expected completions arrive. If a child completion event arrives AFTER your final answer, reply ONLY with NO_REPLY."
	// SpawnSessionAcceptedNote is the note of a session-mode (thread-bound) spawn.
	SpawnSessionAcceptedNote = "thread-bound session stays active after this task; continue in-thread for follow-ups."
)

// SpawnNote returns the note of an accepted spawn: SpawnSessionAcceptedNote in
// session mode (even for cron requesters), "" (omit the field) when the raw
// caller key is a cron session key, else SpawnAcceptedNote.
func SpawnNote(sessionMode, requesterIsCron bool) string {
	switch {
	case sessionMode:
		return SpawnSessionAcceptedNote
	case requesterIsCron:
		return ""
	default:
		return SpawnAcceptedNote
	}
}
