package subagent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/attachments"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/telemetry"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// SpawnToolName is the tool's wire name.
const SpawnToolName = "sessions_spawn"

// forbiddenSpawnKeys are channel-delivery arguments sessions_spawn refuses
// (docs/spec/reference-behaviour.md §9.2 step 1).
var forbiddenSpawnKeys = []string{"target", "transport", "channel", "to", "threadId", "thread_id", "replyTo", "reply_to"}

var spawnSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "task": {"type": "string"},
    "label": {"type": "string"},
    "runtime": {"type": "string", "enum": ["subagent", "acp"]},
    "agentId": {"type": "string"},
    "model": {"type": "string"},
    "thinking": {"type": "string"},
    "cwd": {"type": "string"},
    "runTimeoutSeconds": {"type": "number", "minimum": 0},
    "timeoutSeconds": {"type": "number", "minimum": 0},
    "thread": {"type": "boolean"},
    "mode": {"type": "string", "enum": ["run", "session"]},
    "cleanup": {"type": "string", "enum": ["delete", "keep"]},
    "sandbox": {"type": "string", "enum": ["inherit", "require"]},
    "streamTo": {"type": "string", "enum": ["parent"]},
    "attachments": {"type": "array", "maxItems": 50, "items": {"type": "object", "properties": {
      "name": {"type": "string"}, "content": {"type": "string"},
      "encoding": {"type": "string", "enum": ["utf8", "base64"]}, "mimeType": {"type": "string"}},
      "required": ["name", "content"]}},
    "attachAs": {"type": "object", "properties": {"mountPath": {"type": "string"}}},
    "budget": {"type": "object", "additionalProperties": false, "properties": {
      "maxRuns": {"type": "integer", "minimum": 0}, "maxTokens": {"type": "integer", "minimum": 0},
      "maxCost": {"type": "number", "minimum": 0}, "maxWallTimeSeconds": {"type": "integer", "minimum": 0},
      "maxConcurrentChildren": {"type": "integer", "minimum": 0}}}
  },
  "required": ["task"]
}`)

// Tool returns the sessions_spawn tool.
func (m *Manager) Tool() tools.Tool { return spawnTool{m} }

type spawnTool struct{ m *Manager }

func (spawnTool) Name() string  { return SpawnToolName }
func (spawnTool) Label() string { return "Sessions" }
func (spawnTool) Description() string {
	return `Spawn an isolated session (runtime="subagent" or runtime="acp"). mode="run" is one-shot and mode="session" is persistent/thread-bound. Subagents inherit the parent workspace directory automatically.`
}
func (spawnTool) Schema() json.RawMessage { return spawnSchema }

func (t spawnTool) Call(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
	p, err := tools.ParseParams(args)
	if err != nil {
		return nil, err
	}
	res, err := t.m.Spawn(ctx, tools.CallerFrom(ctx), p)
	if err != nil {
		return nil, err
	}
	return tools.JSONResult(res), nil
}

// SpawnResult is sessions_spawn's payload.
type SpawnResult struct {
	Status          string               `json:"status"`
	Error           string               `json:"error,omitempty"`
	ChildSessionKey string               `json:"childSessionKey,omitempty"`
	RunID           string               `json:"runId,omitempty"`
	Mode            string               `json:"mode,omitempty"`
	Note            string               `json:"note,omitempty"`
	ModelApplied    *bool                `json:"modelApplied,omitempty"`
	Attachments     *attachments.Receipt `json:"attachments,omitempty"`
}

func spawnErr(status, msg string) *SpawnResult { return &SpawnResult{Status: status, Error: msg} }

// Spawn implements sessions_spawn (docs/spec/reference-behaviour.md §9.2, §9.3): the tool-level
// checks, then the pipeline in order, its early rejections writing nothing.
// The child is registered before its run starts, so its completion always
// finds its record.
func (m *Manager) Spawn(ctx context.Context, caller tools.Caller, p tools.Params) (*SpawnResult, error) {
	for _, k := range forbiddenSpawnKeys {
		if p.Has(k) {
			//lint:ignore ST1005 the reference's text, which models read
			return nil, fmt.Errorf(`sessions_spawn does not support "%s". Use "message" or "sessions_send" for channel delivery.`, k)
		}
	}
	task, err := p.RequiredString("task")
	if err != nil {
		return nil, err
	}
	set := m.cfg.Settings
	sub := set.Subagents
	label := p.RawString("label")
	runtime := "subagent"
	if s, _ := p["runtime"].(string); s == "acp" {
		runtime = "acp"
	}
	mode := ""
	if s, _ := p["mode"].(string); s == "run" || s == "session" {
		mode = s
	}
	cleanup := "keep"
	if s, _ := p["cleanup"].(string); s == "delete" {
		cleanup = "delete"
	}
	sandboxParam := "inherit"
	if s, _ := p["sandbox"].(string); s == "require" {
		sandboxParam = "require"
	}
	streamTo := ""
	if s, _ := p["streamTo"].(string); s == "parent" {
		streamTo = s
	}
	runTimeout, hasTimeout := p.Int("runTimeoutSeconds", 0)
	if !hasTimeout {
		runTimeout, hasTimeout = p.Int("timeoutSeconds", 0)
	}
	thread, _ := p["thread"].(bool)
	files, ferr := parseAttachments(p["attachments"])
	if ferr != nil {
		return spawnErr("error", ferr.Error()), nil
	}
	mountPath := ""
	if a, ok := p["attachAs"].(map[string]any); ok {
		mountPath, _ = a["mountPath"].(string)
	}

	if streamTo != "" && runtime != "acp" {
		return spawnErr("error", "streamTo is only supported for runtime=acp; got runtime="+runtime), nil
	}
	if runtime == "acp" {
		if len(files) > 0 {
			return spawnErr("error", "attachments are currently unsupported for runtime=acp; use runtime=subagent or remove attachments"), nil
		}
		return spawnErr("error", `runtime="acp" is not supported by this gateway; use runtime="subagent"`), nil
	}

	// 1. agentId.
	agentParam := p.String("agentId")
	if agentParam != "" && !sessionkey.IsValidAgentID(agentParam) {
		return spawnErr("error", fmt.Sprintf(`Invalid agentId "%s". Agent IDs must match [a-z0-9][a-z0-9_-]{0,63}. Use agents_list to discover valid targets.`, agentParam)), nil
	}
	// 2. Mode.
	if mode == "" {
		mode = "run"
		if thread {
			mode = "session"
		}
	}
	if mode == "session" && !thread {
		return spawnErr("error", `mode="session" requires thread=true so the subagent can stay bound to a thread.`), nil
	}
	if mode == "session" {
		cleanup = "keep"
	}
	// 4. Timeout.
	if !hasTimeout {
		runTimeout = sub.RunTimeoutSeconds
	}
	// 5. Requester.
	requester := m.alias.RequesterKey(caller.SessionKey)
	requester = m.storeKey(requester, caller.AgentID)
	requesterAgent := sessionkey.NormalizeAgentID(cmp.Or(caller.AgentID, sessionkey.AgentID(requester)))
	requesterSess, err := m.cfg.Store.GetSession(ctx, requester)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	// 6. Depth.
	depth := sessionkey.SubagentDepth(requester)
	if requesterSess != nil && requesterSess.SpawnDepth > depth {
		depth = requesterSess.SpawnDepth
	}
	// 7. Active children (both admission's guards).
	maxDepth := sub.MaxSpawnDepth
	guards := m.guards()
	if policy.CheckActiveChildren(m.ActiveChildren(requester), sub.MaxChildrenPerAgent) != nil {
		m.pruneActive(ctx, requester) // a refusal counts only children the store has live
	}
	if r := guards.SpawnLimits(depth, maxDepth, m.ActiveChildren(requester), sub.MaxChildrenPerAgent); r != nil {
		return spawnErr(r.Status, r.Text), nil
	}
	// 8. Allowlist.
	targetAgent := requesterAgent
	if agentParam != "" {
		targetAgent = sessionkey.NormalizeAgentID(agentParam)
	}
	if d := policy.CheckAllowAgents(requesterAgent, targetAgent, set.Agent(requesterAgent).AllowAgents); d != nil {
		return spawnErr(d.Status, d.Message), nil
	}
	// 9. Child key.
	childKey := sessionkey.SubagentKey(targetAgent, m.cfg.NewID())
	// 10. Sandbox.
	requesterSandboxed := caller.Sandboxed || (caller.SessionKey != "" &&
		policy.ChildSandboxed(set.Agent(requesterAgent).SandboxMode, requester, sessionkey.MainKey(requesterAgent, set.MainKey)))
	childSandboxed := policy.ChildSandboxed(set.Agent(targetAgent).SandboxMode, childKey, sessionkey.MainKey(targetAgent, set.MainKey))
	if d := policy.CheckSandbox(childSandboxed, requesterSandboxed, sandboxParam); d != nil {
		return spawnErr(d.Status, d.Message), nil
	}
	// 11. Model.
	// Empty means the target agent's default model (resolved per run).
	model := cmp.Or(p.String("model"), set.Agent(targetAgent).SubagentModel, set.Agent(targetAgent).Model)
	if model != "" && m.cfg.Models != nil {
		if _, err := m.cfg.Models.ResolveModel(targetAgent, model); err != nil {
			return &SpawnResult{Status: "error", Error: "invalid model: " + model, ChildSessionKey: childKey}, nil
		}
	}
	// 12. Thinking.
	thinking, err := NormalizeThinking(cmp.Or(p.String("thinking"), set.Agent(targetAgent).SubagentThinking))
	if err != nil {
		return spawnErr("error", err.Error()), nil
	}
	runThinking := thinking
	if runThinking == "off" {
		runThinking = ""
	}
	// 14. Threads need a channel plugin; Switchboard's channels are internal.
	if thread {
		return &SpawnResult{Status: "error", Error: "thread=true is unavailable because no channel plugin registered subagent_spawning hooks.",
			ChildSessionKey: childKey}, nil
	}
	// Loop protection: the child's run continues the caller's chain.
	if r := guards.SpawnChain(caller.Chain, childKey); r != nil {
		m.log.Warn("agent chain stopped", "chain", caller.Chain.ID, "hops", caller.Chain.Hops, "from", caller.SessionKey, "spawn", childKey)
		if m.cfg.OnRefusal != nil {
			m.cfg.OnRefusal(r.Kind)
		}
		return &SpawnResult{Status: "error", Error: r.Text, ChildSessionKey: childKey}, nil
	}
	chain := caller.Chain.Next(childKey)
	// Budgets: the requester's trees must have room for another child,
	// and the child's own limits are cut from what they have left.
	childBudget, why, err := m.childBudget(ctx, requester, targetAgent, p["budget"])
	if err != nil {
		return nil, err
	}
	if why != "" {
		if m.cfg.OnRefusal != nil {
			m.cfg.OnRefusal("budget")
		}
		return &SpawnResult{Status: "error", Error: why, ChildSessionKey: childKey}, nil
	}
	// 13. The child session (stored with its record below).
	now := m.cfg.Now()
	newChild := func(s *store.Session) error {
		s.SessionID = m.cfg.NewID()
		s.AgentID = targetAgent
		s.Kind = string(sessionkey.RowKindOf(childKey))
		s.ChatType = string(sessionkey.ChatTypeOf(childKey))
		s.SpawnedBy = requester
		s.SpawnDepth = depth + 1
		s.Model = model
		if thinking != "off" {
			s.ThinkingLevel = thinking
		}
		s.Label = label
		s.CreatedAt, s.UpdatedAt = now, now
		if !childBudget.IsZero() {
			return setBudget(s, childBudget)
		}
		return nil
	}
	// 15. Attachments, in the workspace the child shares with its parent,
	// or in its sandbox's own workspace when a sandbox with
	// workspaceAccess none keeps it from the parent's.
	workspace := cmp.Or(caller.Workspace, set.Agent(requesterAgent).Workspace)
	if childSandboxed {
		if dir := set.Agent(targetAgent).SandboxOwnWorkspace(childKey); dir != "" {
			workspace = dir
		}
	}
	var receipt *attachments.Receipt
	var attDir string
	if len(files) > 0 {
		lim := sub.Attachments
		r, dir, aerr := attachments.Materialize(workspace, files, attachments.Limits{
			Enabled: lim.Enabled, MaxTotalBytes: lim.MaxTotalBytes, MaxFiles: lim.MaxFiles,
			MaxFileBytes: lim.MaxFileBytes, RetainOnSessionKeep: lim.RetainOnSessionKeep,
		}, m.cfg.NewID)
		if aerr != nil {
			var ae *attachments.Error
			if errors.As(aerr, &ae) {
				return spawnErr(ae.Status, ae.Message), nil
			}
			return spawnErr("error", aerr.Error()), nil
		}
		receipt, attDir = r, dir
	}
	// 16. Prompt and task.
	system := ChildSystemPrompt(PromptParams{
		Task: task, Label: label, RequesterKey: m.alias.Display(requester), RequesterChannel: caller.Channel,
		ChildKey: childKey, ChildDepth: depth + 1, MaxSpawnDepth: maxDepth,
	})
	if receipt != nil {
		system += "\n\n" + attachments.PromptSuffix(receipt, mountPath)
	}
	message := ChildTaskMessage(depth+1, maxDepth, mode == "session", task)
	// 18 (before 17). Register, so the child's end always finds its record.
	runID := m.cfg.NewID()
	rec := Record{
		ChildRunID: runID, ChildSessionKey: childKey, AgentID: targetAgent,
		RequesterKey: requester, RequesterDisplay: m.alias.Display(requester), RequesterChannel: caller.Channel,
		Task: task, Label: label, Cleanup: cleanup, Mode: mode, Model: model, RunTimeoutSeconds: runTimeout,
		CreatedAt: now.UnixMilli(), Workspace: workspace, AttachmentsDir: attDir,
		RetainAttachments: sub.Attachments.RetainOnSessionKeep,
	}
	if requesterSess != nil {
		rec.RequesterParent = requesterSess.SpawnedBy
	}
	if mins := sub.ArchiveAfterMinutes; mode == "run" && mins > 0 {
		rec.ArchiveAtMs = now.Add(time.Duration(mins) * time.Minute).UnixMilli()
	}
	payload, err := json.Marshal(rec)
	if err != nil {
		m.undoSpawn(ctx, childKey, workspace, attDir)
		return nil, fmt.Errorf("subagent: encode record: %w", err)
	}
	m.addActive(requester, runID, childKey)
	row := &store.SubagentRun{
		ChildRunID: runID, ChildSessionKey: childKey, RequesterKey: requester, Payload: payload,
		CreatedAt: now, // the record's own CreatedAt: subagents.list pages by it
	}
	if rec.ArchiveAtMs > 0 {
		row.ArchiveAt = time.UnixMilli(rec.ArchiveAtMs)
	}
	// 13 and 18: the child session and its record, in one commit where
	// the store can; with the child's run (17), in the commit that opens
	// it, where the runner's store can too (openChild).
	acceptCtx, child, res := m.openChild(ctx, childKey, newChild, row, chain.Untrusted != "")
	if res != nil {
		m.dropActive(requester, runID)
		m.undoSpawn(ctx, childKey, workspace, attDir)
		return res, nil
	}
	// 17. The child run.
	timeout := time.Duration(runTimeout) * time.Second
	if runTimeout == 0 {
		timeout = -1 // no timeout
	}
	_, span := m.cfg.Tracer.StartStep(ctx, telemetry.Step{Name: "sessions_spawn", From: requester, To: childKey, RunID: runID,
		Link: telemetry.Link{ChainID: chain.ID, Parent: chain.Span, Hops: caller.Chain.Hops}})
	defer span.End(nil)
	if id := span.ID(); id != "" {
		chain.Span = id
	}
	if _, err := m.cfg.Admit.Accept(acceptCtx, admission.Request{Origin: admission.OriginSpawn, Input: agent.Input{
		RunID: runID, SessionKey: childKey, AgentID: targetAgent, Message: message, Lane: LaneSubagent,
		ExtraSystemPrompt: system, Thinking: runThinking, Timeout: timeout,
		Model: model, Label: label, SpawnedBy: requester, Channel: caller.Channel,
		IdempotencyKey: runID + ":user", Chain: &chain,
	}}); err != nil {
		m.dropActive(requester, runID)
		if child != nil && child.res != nil {
			// The child's rows were refused: nothing of it was stored.
			m.undoSpawn(ctx, childKey, workspace, attDir)
			return child.res, nil
		}
		if rerr := m.setRetired(context.WithoutCancel(ctx), runID); rerr != nil {
			m.log.Error("sub-agent record of a failed spawn not closed", "runId", runID, "err", rerr)
		}
		m.undoSpawn(ctx, childKey, workspace, attDir)
		return &SpawnResult{Status: "error", Error: err.Error(), ChildSessionKey: childKey, RunID: runID}, nil
	}
	if child != nil && !child.Stored() {
		// Not reached (an admitted run stores them): stored late rather
		// than never.
		if err := child.Create(context.WithoutCancel(ctx)); err != nil {
			m.log.Error("spawned child's rows not stored", "child", childKey, "err", err)
		}
	}
	applied := true
	return &SpawnResult{
		Status: "accepted", ChildSessionKey: childKey, RunID: runID, Mode: mode,
		Note: SpawnNote(mode == "session", sessionkey.IsCron(caller.SessionKey)), ModelApplied: &applied, Attachments: receipt,
	}, nil
}

// childOpen is a spawn's store.ChildOpen and what storing the child's
// rows on their own answered (res: the spawn's error result, nil when
// they were stored or were not stored so).
type childOpen struct {
	store.ChildOpen
	res *SpawnResult
}

// openChild prepares the storing of a spawn's child session (newChild
// applied to a new row) and record: where the manager's store keeps them
// in one commit (store.ChildCreator), they go with the child's first run,
// stored in the commit that opens it where the runner's store can
// (store.ChildOpen in the returned context, which the run's admission is
// to get), and else on their own just before (ChildOpen.Create). A child
// whose run comes from outside (untrusted: its run's admission marks its
// session) has them stored now (createChild), as has a store that cannot
// keep them in one commit. res is the spawn's error result when they are
// not stored (nil: stored, or to be stored with the run).
func (m *Manager) openChild(ctx context.Context, childKey string, newChild func(*store.Session) error, row *store.SubagentRun, untrusted bool) (context.Context, *childOpen, *SpawnResult) {
	if _, ok := m.cfg.Store.(store.ChildCreator); !ok || untrusted {
		return ctx, nil, m.createChild(ctx, childKey, newChild, row)
	}
	sess := &store.Session{Key: childKey}
	if err := newChild(sess); err != nil {
		return ctx, nil, &SpawnResult{Status: "error", Error: err.Error(), ChildSessionKey: childKey}
	}
	c := &childOpen{ChildOpen: store.ChildOpen{Session: sess, Row: row}}
	c.Create = func(ctx context.Context) error {
		// The row the run's admission was given, as it is (its session
		// id is the run's).
		c.res = m.createChild(ctx, childKey, func(s *store.Session) error {
			*s = *sess.Clone()
			return nil
		}, row)
		if c.res != nil {
			return errors.New(c.res.Error)
		}
		return nil
	}
	return store.WithChildOpen(ctx, &c.ChildOpen), c, nil
}

// createChild stores a spawn's child session (newChild applied to a new
// row) and its record row, in one transaction when the store can
// (store.ChildCreator) and else one after the other. It returns the
// spawn's error result when either is not stored (nil: both are).
func (m *Manager) createChild(ctx context.Context, childKey string, newChild func(*store.Session) error, row *store.SubagentRun) *SpawnResult {
	registerErr := func(err error) *SpawnResult {
		return &SpawnResult{Status: "error", Error: "Failed to register subagent run: " + err.Error(), ChildSessionKey: childKey, RunID: row.ChildRunID}
	}
	// Only the record's insert finds a conflict; any other error (fn's as
	// it is) is the session's, as when the two are stored apart.
	_, err := store.CreateChild(ctx, m.cfg.Store, childKey, newChild, row)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrConflict):
		return registerErr(err)
	case !errors.Is(err, errors.ErrUnsupported):
		return &SpawnResult{Status: "error", Error: err.Error(), ChildSessionKey: childKey}
	}
	if _, err := m.cfg.Store.UpdateSession(ctx, childKey, true, newChild); err != nil {
		return &SpawnResult{Status: "error", Error: err.Error(), ChildSessionKey: childKey}
	}
	if err := m.cfg.Store.PutSubagent(ctx, row); err != nil {
		return registerErr(err)
	}
	return nil
}

func (m *Manager) undoSpawn(ctx context.Context, childKey, workspace, attDir string) {
	ctx = context.WithoutCancel(ctx)
	if err := m.cfg.Store.DeleteSession(ctx, childKey, true); err != nil && !errors.Is(err, store.ErrNotFound) {
		m.log.Warn("failed spawn: child session not deleted", "child", childKey, "err", err)
	}
	if attDir != "" {
		if err := attachments.Remove(workspace, attDir); err != nil {
			m.log.Warn("failed spawn: attachments not removed", "dir", attDir, "err", err)
		}
	}
}

// storeKey canonicalises a requester key.
func (m *Manager) storeKey(key, agentID string) string {
	if sessionkey.IsReserved(key) {
		return key
	}
	return sessionkey.ToStoreKey(sessionkey.NormalizeAgentID(cmp.Or(agentID, sessionkey.AgentID(key))), key, m.cfg.Settings.MainKey)
}

// parseAttachments reads the attachments param: absent or null is none;
// anything but an array of objects whose name, content, encoding and
// mimeType are strings (when given) is refused, never ignored.
func parseAttachments(raw any) ([]attachments.File, error) {
	if raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("attachments must be an array of {name, content, encoding?, mimeType?} objects, got %s", jsonType(raw))
	}
	files := make([]attachments.File, 0, len(list))
	for i, x := range list {
		f, ok := x.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("attachments[%d] must be an object, got %s", i, jsonType(x))
		}
		var file attachments.File
		// Missing names and contents are left to the attachment checks,
		// which give the reference's errors; wrong types stop here.
		for _, fld := range []struct {
			name string
			dst  *string
		}{{"name", &file.Name}, {"content", &file.Content}, {"encoding", &file.Encoding}, {"mimeType", &file.MimeType}} {
			v, present := f[fld.name]
			if !present || v == nil {
				continue
			}
			str, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("attachments[%d].%s must be a string, got %s", i, fld.name, jsonType(v))
			}
			*fld.dst = str
		}
		files = append(files, file)
	}
	return files, nil
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
