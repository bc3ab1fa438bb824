package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
)

// maxLabelLen bounds session labels (code points).
const maxLabelLen = 64

// invalid returns an INVALID_REQUEST error.
func invalid(msg string) *wire.Error { return wire.NewError(wire.CodeInvalidRequest, msg) }

// agentID returns the normalized agent id of a request: the agentId param
// when given, else the default agent.
func (s *Server) agentID(param string) string {
	if strings.TrimSpace(param) == "" {
		return s.defaultAgent
	}
	return sessionkey.NormalizeAgentID(param)
}

// knownAgent reports whether id is the default agent or a configured one.
func (s *Server) knownAgent(id string) bool {
	return s.conf.Known(id)
}

// checkKeyAgent refuses a turn in a session whose key names an agent that
// is not configured, so that no run and no workspace is made for it. When
// the session exists the agent was configured once, and the answer is the
// reference's (2026.9.6: chat.send and agent answer INVALID_REQUEST
// `Agent "<id>" no longer exists in configuration`); an agent that never
// had a session is reported as unknown.
func (s *Server) checkKeyAgent(ctx context.Context, key string) error {
	id := agentOfKey(key, "")
	if id == "" || s.knownAgent(id) {
		return nil
	}
	_, err := s.cfg.Store.GetSession(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return unknownAgent(id)
	case err != nil:
		return err
	}
	return invalid(fmt.Sprintf("Agent %q no longer exists in configuration", id))
}

func unknownAgent(id string) *wire.Error {
	return invalid("unknown agent id: " + id).WithDetails(map[string]any{"code": wire.DetailUnknownAgentID, "agentId": id})
}

// canonicalKey maps a session key as a client sent it to the canonical
// store key: the reserved keys "global" and "unknown" stay; with scope
// "global" the main alias is "global"; the configured main key and "main"
// become the agent's main key; anything else goes through
// sessionkey.ToStoreKey.
func (s *Server) canonicalKey(raw, agentID string) string {
	k := strings.TrimSpace(raw)
	if sessionkey.IsReserved(k) {
		return k
	}
	if agentID == "" {
		agentID = s.defaultAgent
	}
	if strings.EqualFold(k, sessionkey.DefaultMainKey) || k == s.alias.MainKey {
		if s.alias.Scope == sessionkey.ScopeGlobal {
			return sessionkey.GlobalKey
		}
		return sessionkey.MainKey(agentID, s.alias.MainKey)
	}
	return sessionkey.ToStoreKey(agentID, k, s.alias.MainKey)
}

// isMainKey reports whether key is an agent's main session (or the global
// session).
func (s *Server) isMainKey(key string) bool {
	if key == sessionkey.GlobalKey {
		return true
	}
	return key == sessionkey.MainKey(sessionkey.AgentID(key), s.alias.MainKey)
}

// initSession fills in the derived fields of a session row the gateway
// creates, as the daemon's runner hook does for rows the runner creates.
func (s *Server) initSession(sess *store.Session, agentID string) {
	admission.FillSession(sess, agentID, "", s.now(), s.newID)
}

// row converts a stored session to its wire row.
func row(sess *store.Session) wire.SessionRow {
	r := wire.SessionRow{
		Key: sess.Key, Kind: sess.Kind, SessionID: sess.SessionID, AgentID: sess.AgentID,
		Channel: sess.Channel, ChatType: sess.ChatType, DisplayName: sess.DisplayName, Label: sess.Label,
		SpawnedBy: sess.SpawnedBy, SpawnDepth: sess.SpawnDepth, Model: sess.Model,
		ThinkingLevel: sess.ThinkingLevel, VerboseLevel: sess.VerboseLevel, ElevatedLevel: agent.SessionElevatedLevel(sess),
		Untrusted:     agent.SessionUntrusted(sess),
		ContextTokens: sess.ContextTokens, InputTokens: sess.InputTokens, OutputTokens: sess.OutputTokens,
		TotalTokens: sess.TotalTokens, SystemSent: sess.SystemSent, AbortedLastRun: sess.AbortedLastRun,
		SendPolicy: sess.SendPolicy, LastChannel: sess.LastChannel, LastTo: sess.LastTo,
		LastAccountID: sess.LastAccountID, UpdatedAt: ms(sess.UpdatedAt), CreatedAt: ms(sess.CreatedAt),
	}
	if r.Kind == "" {
		r.Kind = string(sessionkey.RowKindOf(sess.Key))
	}
	if r.ChatType == "unknown" { // not a chat type in the reference's schema
		r.ChatType = ""
	}
	if d := sess.DeliveryContext; !d.IsZero() {
		r.Delivery = &wire.DeliveryContext{Channel: d.Channel, To: d.To, AccountID: d.AccountID, ThreadID: d.ThreadID}
	}
	if len(sess.Extra) > 0 {
		var extra map[string]json.RawMessage
		if json.Unmarshal(sess.Extra, &extra) == nil {
			r.Extra = extra
			_, r.Archived = extra[archivedAtField]
		}
	}
	return r
}

// archivedAtField is the entry field (kept in the session's Extra) that
// says when it was archived, in ms.
const archivedAtField = "archivedAt"

// setArchived archives sess at now (keeping an earlier archivedAt) or
// restores it.
func setArchived(sess *store.Session, archived bool, now time.Time) error {
	extra := map[string]json.RawMessage{}
	if len(sess.Extra) > 0 {
		if err := json.Unmarshal(sess.Extra, &extra); err != nil {
			return fmt.Errorf("session %s: reading its entry fields: %w", sess.Key, err)
		}
	}
	_, was := extra[archivedAtField]
	switch {
	case archived && !was:
		extra[archivedAtField] = json.RawMessage(strconv.FormatInt(now.UnixMilli(), 10))
	case !archived && was:
		delete(extra, archivedAtField)
	default:
		return nil
	}
	b, err := json.Marshal(extra)
	if err != nil {
		return err
	}
	sess.Extra = b
	return nil
}

// archivedFilter is sessions.list's archived param: whether a row with
// archived true is listed (all: every row is).
func archivedFilter(v any) (want, all bool, err *wire.Error) {
	switch v := v.(type) {
	case nil:
		return false, false, nil
	case bool:
		return v, false, nil
	case string:
		if v == "all" {
			return false, true, nil
		}
	}
	return false, false, invalid(`invalid sessions.list params: archived must be a boolean or "all"`)
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// validLabel trims a label and checks it as the reference does.
func validLabel(label string) (string, *wire.Error) {
	l := strings.TrimSpace(label)
	if l == "" {
		return "", invalid("invalid label: empty")
	}
	if utf8.RuneCountInString(l) > maxLabelLen {
		return "", invalid("invalid label: too long (max 64)")
	}
	return l, nil
}

func (s *Server) handleHealth(ctx context.Context, cl *call) (any, error) {
	var p wire.HealthParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	return s.fullHealth(ctx)
}

func (s *Server) health() wire.Health {
	return wire.Health{OK: true, TS: s.now().UnixMilli(), DefaultAgentID: s.defaultAgent}
}

func (s *Server) handleSessionsList(ctx context.Context, cl *call) (any, error) {
	var p wire.SessionsListParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	opts := store.ListOptions{Label: strings.TrimSpace(p.Label), Search: strings.TrimSpace(p.Search)}
	if strings.TrimSpace(p.AgentID) != "" {
		opts.AgentID = sessionkey.NormalizeAgentID(p.AgentID)
	}
	spawnedBy := ""
	if strings.TrimSpace(p.SpawnedBy) != "" {
		spawnedBy = s.canonicalKey(p.SpawnedBy, "")
		opts.SpawnedBy = spawnedBy
	}
	if p.ActiveMinutes != nil {
		opts.UpdatedSince = s.now().Add(-time.Duration(*p.ActiveMinutes) * time.Minute)
	}
	opts.Exclude = listExclusions(p, spawnedBy != "")
	// Filters, order and the page are the store's: one more row than the
	// page says whether there are more.
	offset := 0
	if p.Offset != nil {
		offset = max(*p.Offset, 0)
	}
	opts.Offset = offset
	if p.Limit != nil {
		opts.Limit = *p.Limit + 1
	}
	page, err := s.cfg.Store.ListSessions(ctx, opts)
	if err != nil {
		return nil, err
	}
	res := wire.SessionsListResult{TS: s.now().UnixMilli(), Path: s.cfg.StorePath, Defaults: s.listDefaults()}
	if p.Limit != nil {
		res.LimitApplied = *p.Limit
		if len(page) > *p.Limit {
			page = page[:*p.Limit]
			res.HasMore = true
			next := offset + *p.Limit
			res.NextOffset = &next
		}
	}
	wantArchived, allArchived, werr := archivedFilter(p.Archived)
	if werr != nil {
		return nil, werr
	}
	// Archived rows are left out of the store's page (archivedAt is an
	// entry field the store does not index): a page may come out short.
	if p.HasBoard { // no session has a board
		page, res.HasMore, res.NextOffset = nil, false, nil
	}
	if !allArchived {
		page = slices.DeleteFunc(page, func(sess *store.Session) bool { return row(sess).Archived != wantArchived })
	}
	statuses, err := s.sessionStatuses(ctx, page)
	if err != nil {
		return nil, err
	}
	rows := make([]wire.SessionRow, 0, len(page))
	for _, sess := range page {
		r := row(sess)
		r.Status = statuses[sess.Key]
		if s.cfg.Budget != nil {
			b, err := s.cfg.Budget(ctx, sess)
			if err != nil {
				return nil, err
			}
			if b != nil {
				r.Budget = b
			}
		}
		if p.IncludeLastMessage {
			if r.LastMessagePreview, err = s.lastMessagePreview(ctx, sess); err != nil {
				return nil, err
			}
		}
		rows = append(rows, r)
	}
	res.Sessions = rows
	res.Count = len(rows)
	return res, nil
}

// listExclusions are the key classes sessions.list leaves out: cron runs
// always; global and unknown unless asked for (and always under spawnedBy);
// sub-agents and cron sessions when asked.
func listExclusions(p wire.SessionsListParams, underSpawnedBy bool) store.KeyClass {
	ex := store.ClassCronRun
	if !p.IncludeGlobal || underSpawnedBy {
		ex |= store.ClassGlobal
	}
	if !p.IncludeUnknown || underSpawnedBy {
		ex |= store.ClassUnknown
	}
	if p.ExcludeSubagents {
		ex |= store.ClassSubagent
	}
	if p.ExcludeCron {
		ex |= store.ClassCron
	}
	return ex
}

func (s *Server) listDefaults() wire.ListDefaults {
	ref := s.conf.Agent(s.defaultAgent).Model
	if ref == "" && s.cfg.DefaultModelRef != nil {
		ref = s.cfg.DefaultModelRef(s.defaultAgent)
	}
	prov, model := settings.SplitModelRef(ref)
	return wire.ListDefaults{ModelProvider: prov, Model: model}
}

func (s *Server) handleSessionsResolve(ctx context.Context, cl *call) (any, error) {
	var p wire.SessionsResolveParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	n := 0
	for _, set := range []bool{p.Key != "", p.SessionID != "", p.Label != nil} {
		if set {
			n++
		}
	}
	switch {
	case n > 1:
		return nil, invalid("Provide either key, sessionId, or label (not multiple)")
	case n == 0:
		return nil, invalid("Either key, sessionId, or label is required")
	}
	agentFilter := ""
	if strings.TrimSpace(p.AgentID) != "" {
		agentFilter = sessionkey.NormalizeAgentID(p.AgentID)
	}
	spawnedBy := ""
	if strings.TrimSpace(p.SpawnedBy) != "" {
		spawnedBy = s.canonicalKey(p.SpawnedBy, "")
	}
	visible := func(sess *store.Session) bool {
		switch {
		case agentFilter != "" && sess.AgentID != agentFilter:
			return false
		case spawnedBy != "" && (sess.SpawnedBy != spawnedBy || sessionkey.IsReserved(sess.Key)):
			return false
		case sess.Key == sessionkey.GlobalKey && !p.IncludeGlobal && p.Key == "":
			return false
		case sess.Key == sessionkey.UnknownKey && !p.IncludeUnknown && p.Key == "":
			return false
		}
		return true
	}
	keysOf := func(ss []*store.Session) string {
		keys := make([]string, len(ss))
		for i, x := range ss {
			keys[i] = x.Key
		}
		return strings.Join(keys, ", ")
	}
	switch {
	case p.Key != "":
		key := s.canonicalKey(p.Key, agentFilter)
		sess, err := s.cfg.Store.GetSession(ctx, key)
		if errors.Is(err, store.ErrNotFound) || err == nil && !visible(sess) {
			return nil, invalid("No session found: " + p.Key)
		}
		if err != nil {
			return nil, err
		}
		return resolved(sess), nil
	case p.SessionID != "":
		found, err := s.cfg.Store.SessionsByID(ctx, strings.TrimSpace(p.SessionID))
		if err != nil {
			return nil, err
		}
		found = slices.DeleteFunc(found, func(x *store.Session) bool { return !visible(x) })
		switch len(found) {
		case 0:
			return nil, invalid("No session found: " + p.SessionID)
		case 1:
			return resolved(found[0]), nil
		}
		return nil, invalid("Multiple sessions found for sessionId: " + p.SessionID + " (" + keysOf(found) + ")")
	default:
		label, werr := validLabel(*p.Label)
		if werr != nil {
			return nil, werr
		}
		found, err := s.cfg.Store.ListSessions(ctx, store.ListOptions{Label: label, AgentID: agentFilter, SpawnedBy: spawnedBy})
		if err != nil {
			return nil, err
		}
		found = slices.DeleteFunc(found, func(x *store.Session) bool { return !visible(x) || x.Label != label })
		switch len(found) {
		case 0:
			return nil, invalid("No session found with label: " + label)
		case 1:
			return resolved(found[0]), nil
		}
		return nil, invalid("Multiple sessions found with label: " + label + " (" + keysOf(found) + ")")
	}
}

// errSessionChanged aborts an update whose expectedSessionId is stale. Its
// details are written out as WithDetails would marshal them, so the
// linker lays the error out and nothing builds it at process start.
var errSessionChanged = &wire.Error{
	Code: wire.CodeInvalidRequest, Message: "session changed",
	Details: json.RawMessage(`{"code":"` + wire.DetailSessionChanged + `","reason":"session-changed"}`),
}

func (s *Server) handleSessionsPatch(ctx context.Context, cl *call) (any, error) {
	var p wire.SessionsPatchParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	agentID := s.agentID(p.AgentID)
	key := s.canonicalKey(p.Key, agentID)

	// Validate every mutation before touching the store.
	if p.Archived != nil && *p.Archived && s.isMainKey(key) {
		return nil, invalid("Cannot archive an agent's main session.")
	}
	var label, model, thinking, verbose, sendPolicy, spawnedBy string
	if p.Label.Set && !p.Label.Null {
		l, werr := validLabel(p.Label.Value)
		if werr != nil {
			return nil, werr
		}
		label = l
	}
	if p.Model.Set && !p.Model.Null {
		model = strings.TrimSpace(p.Model.Value)
		if model != "" && s.cfg.Models != nil {
			if _, err := s.cfg.Models.ResolveModel(sessionkey.AgentID(key), model); err != nil {
				return nil, invalid("invalid model: " + model)
			}
		}
	}
	if p.ThinkingLevel.Set && !p.ThinkingLevel.Null {
		thinking = norm(p.ThinkingLevel.Value)
		if thinking != "" && !slices.Contains(policy.ThinkLevels, thinking) {
			return nil, invalid(`invalid thinkingLevel (use "off"|"minimal"|"low"|"medium"|"high"|"xhigh"|"adaptive")`)
		}
	}
	if p.VerboseLevel.Set && !p.VerboseLevel.Null {
		verbose = strings.TrimSpace(p.VerboseLevel.Value)
	}
	elevated := ""
	if p.ElevatedLevel.Set && !p.ElevatedLevel.Null && strings.TrimSpace(p.ElevatedLevel.Value) != "" {
		l, ok := policy.NormalizeElevatedLevel(p.ElevatedLevel.Value)
		if !ok {
			return nil, invalid(`invalid elevatedLevel (use "on"|"off"|"ask"|"full")`)
		}
		elevated = l
	}
	if p.SendPolicy.Set && !p.SendPolicy.Null {
		v, err := policy.NormalizeSendPolicyPatch(p.SendPolicy.Value)
		if err != nil {
			return nil, invalid(err.Error())
		}
		sendPolicy = v
	}
	if p.SpawnedBy.Set && !p.SpawnedBy.Null && strings.TrimSpace(p.SpawnedBy.Value) != "" {
		spawnedBy = s.canonicalKey(p.SpawnedBy.Value, "")
	}

	unlock, err := s.claimLabel(ctx, key, agentID, label)
	if err != nil {
		return nil, err
	}
	defer unlock()
	sess, err := s.cfg.Store.UpdateSession(ctx, key, true, func(sess *store.Session) error {
		if p.ExpectedSessionID != "" && sess.SessionID != p.ExpectedSessionID {
			return errSessionChanged
		}
		if sess.CreatedAt.IsZero() {
			s.initSession(sess, agentID)
			sess.CreatedAt = s.now()
		}
		if p.Label.Set {
			sess.Label = label
		}
		if p.Model.Set {
			sess.Model = model
		}
		if p.ThinkingLevel.Set {
			sess.ThinkingLevel = thinking
		}
		if p.VerboseLevel.Set {
			sess.VerboseLevel = verbose
		}
		if p.ElevatedLevel.Set {
			if err := agent.SetSessionElevatedLevel(sess, elevated); err != nil {
				return err
			}
		}
		if p.SendPolicy.Set {
			sess.SendPolicy = sendPolicy
		}
		if p.SpawnedBy.Set {
			sess.SpawnedBy = spawnedBy
		}
		if p.SpawnDepth.Set {
			sess.SpawnDepth = p.SpawnDepth.Value
		}
		if p.Archived != nil {
			if err := setArchived(sess, *p.Archived, s.now()); err != nil {
				return err
			}
		}
		sess.UpdatedAt = s.now()
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.sessionsChanged(sess.Key, "patch", "")
	return wire.SessionsPatchResult{OK: true, Path: s.cfg.StorePath, Key: sess.Key, Entry: row(sess)}, nil
}

func (s *Server) handleSessionsReset(ctx context.Context, cl *call) (any, error) {
	var p wire.SessionsResetParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	agentID := s.agentID(p.AgentID)
	key := s.canonicalKey(p.Key, agentID)
	sess, err := s.resetSession(ctx, key, agentID, p.Reason, p.ExpectedSessionID, "")
	if err != nil {
		return nil, err
	}
	s.sessionsChanged(sess.Key, "reset", "")
	return wire.SessionsEntryResult{OK: true, Key: sess.Key, Entry: row(sess)}, nil
}

func (s *Server) handleSessionsDelete(ctx context.Context, cl *call) (any, error) {
	var p wire.SessionsDeleteParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	key := s.canonicalKey(p.Key, s.agentID(p.AgentID))
	if s.isMainKey(key) {
		return nil, invalid("Cannot delete the main session (" + key + ")")
	}
	sess, err := s.cfg.Store.GetSession(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return wire.SessionsDeleteResult{OK: true, Key: key, Deleted: false, Archived: []string{}}, nil
	}
	if err != nil {
		return nil, err
	}
	if p.ExpectedSessionID != "" && sess.SessionID != p.ExpectedSessionID {
		return nil, errSessionChanged
	}
	if _, err := s.cfg.Runner.AbortSession(ctx, key); err != nil {
		return nil, err
	}
	deleteTranscript := p.DeleteTranscript == nil || *p.DeleteTranscript
	err = s.cfg.Store.DeleteSession(ctx, key, deleteTranscript)
	if errors.Is(err, store.ErrNotFound) {
		return wire.SessionsDeleteResult{OK: true, Key: key, Deleted: false, Archived: []string{}}, nil
	}
	if err != nil {
		return nil, err
	}
	s.sessionsChanged(key, "delete", "")
	return wire.SessionsDeleteResult{OK: true, Key: key, Deleted: true, Archived: []string{}}, nil
}

func (s *Server) handleSessionsCreate(ctx context.Context, cl *call) (any, error) {
	var p wire.SessionsCreateParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	agentID := s.agentID(p.AgentID)
	if strings.TrimSpace(p.AgentID) != "" && !s.knownAgent(agentID) {
		return nil, invalid("agent not found: " + agentID).WithDetails(map[string]any{"code": wire.DetailUnknownAgentID, "agentId": agentID})
	}
	key := "agent:" + agentID + ":chat:" + s.newID()
	if strings.TrimSpace(p.Key) != "" {
		key = s.canonicalKey(p.Key, agentID)
	}
	sess := &store.Session{Key: key, DisplayName: strings.TrimSpace(p.DisplayName)}
	if p.Label != "" {
		l, werr := validLabel(p.Label)
		if werr != nil {
			return nil, werr
		}
		sess.Label = l
	}
	if model := strings.TrimSpace(p.Model); model != "" {
		if s.cfg.Models != nil {
			if _, err := s.cfg.Models.ResolveModel(agentOfKey(key, agentID), model); err != nil {
				return nil, invalid("invalid model: " + model)
			}
		}
		sess.Model = model
	}
	if p.ThinkingLevel != "" {
		sess.ThinkingLevel = norm(p.ThinkingLevel)
		if !slices.Contains(policy.ThinkLevels, sess.ThinkingLevel) {
			return nil, invalid(`invalid thinkingLevel (use "off"|"minimal"|"low"|"medium"|"high"|"xhigh"|"adaptive")`)
		}
	}
	s.initSession(sess, agentID)
	now := s.now()
	sess.CreatedAt, sess.UpdatedAt = now, now
	unlock, err := s.claimLabel(ctx, key, agentID, sess.Label)
	if err != nil {
		return nil, err
	}
	err = s.cfg.Store.CreateSession(ctx, sess)
	unlock()
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, invalid("session already exists: " + key)
		}
		return nil, err
	}
	s.sessionsChanged(key, "new", "")
	res := wire.SessionsEntryResult{OK: true, Key: key, Entry: row(sess), SessionID: sess.SessionID}
	if strings.TrimSpace(p.Message) == "" {
		return res, nil
	}
	// The first turn, as chat.send would take it. The session exists
	// whatever becomes of it: a refusal is reported, not returned.
	idem := cmp.Or(p.IdempotencyKey, s.newID())
	sent, err := s.chatSend(ctx, cl, wire.ChatSendParams{SessionKey: key, Message: p.Message, IdempotencyKey: idem, AgentID: agentID})
	if err != nil {
		res.RunError = cl.c.wireError(err)
		return res, nil
	}
	if r, ok := sent.(wire.ChatSendResult); ok {
		res.RunID, res.Status, res.RunStarted = r.RunID, r.Status, r.Status == "started"
	}
	return res, nil
}

// resolved is the sessions.resolve answer for one session.
func resolved(s *store.Session) wire.SessionsResolveResult {
	agentID := s.AgentID
	if agentID == "" {
		agentID = sessionkey.AgentID(s.Key)
	}
	return wire.SessionsResolveResult{OK: true, Key: s.Key, AgentID: agentID, DisplayName: s.DisplayName}
}

func norm(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// rowStatus maps a run's status to the session row status the reference
// reports for the session's latest run ("" for an unknown status).
func rowStatus(st store.RunStatus) string {
	switch st {
	case store.RunQueued:
		return "queued"
	case store.RunRunning:
		return "running"
	case store.RunOK:
		return "done"
	case store.RunError:
		return "failed"
	case store.RunAborted:
		return "killed"
	case store.RunTimeout:
		return "timeout"
	}
	return ""
}

// statusRunsPerSession is how many runs per listed session one query
// reads to find each session's latest; sessions it misses are asked for
// one by one.
const statusRunsPerSession = 4

// sessionStatus is the status of sess's latest run ("" when it never
// ran).
func (s *Server) sessionStatus(ctx context.Context, sess *store.Session) (string, error) {
	st, err := s.sessionStatuses(ctx, []*store.Session{sess})
	return st[sess.Key], err
}

// sessionStatuses returns the status of each session's latest run, by
// key; a session that never ran has none.
func (s *Server) sessionStatuses(ctx context.Context, page []*store.Session) (map[string]string, error) {
	out := make(map[string]string, len(page))
	if len(page) == 0 {
		return out, nil
	}
	keys := make([]string, len(page))
	for i, sess := range page {
		keys[i] = sess.Key
	}
	runs, err := s.cfg.Store.ListRuns(ctx, store.RunFilter{SessionKeys: keys, Newest: true, Limit: statusRunsPerSession * len(keys)})
	if err != nil {
		return nil, fmt.Errorf("session statuses: %w", err)
	}
	for _, r := range runs {
		if _, ok := out[r.SessionKey]; !ok {
			out[r.SessionKey] = rowStatus(r.Status)
		}
	}
	if len(runs) < statusRunsPerSession*len(keys) {
		return out, nil // every run of these sessions was read
	}
	for _, k := range keys {
		if _, ok := out[k]; ok {
			continue
		}
		latest, err := s.cfg.Store.ListRuns(ctx, store.RunFilter{SessionKey: k, Newest: true, Limit: 1})
		if err != nil {
			return nil, fmt.Errorf("session status: %w", err)
		}
		if len(latest) == 1 {
			out[k] = rowStatus(latest[0].Status)
		}
	}
	return out, nil
}
