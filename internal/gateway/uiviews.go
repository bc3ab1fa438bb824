package gateway

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/skills"
	"github.com/switchboardhq/switchboard/internal/subagent"
)

// The reference Control UI's read-only views besides chat: the chat
// header's metadata, the Systems page (environments.list, node.list,
// system.info), the skills and update checks, and the task drawer. What
// Switchboard has no notion of (progress cards, the session companion and
// observer, ask-user questions, talk, transcript branches) answers empty
// in the reference's shape (absent.go).

// chatCommands are the commands chat.send understands
// (compaction.ParseCommand, policy.ParseSendCommand,
// policy.ParseQueueCommand, policy.ParseElevatedCommand), as chat.metadata
// lists them: each native, for text and native use, with "/" and its name
// as its text alias. Written out whole, so the linker lays the table out
// and no init fills it in at process start.
var chatCommands = []wire.ChatCommand{
	{
		Name: compaction.CmdNew, NativeName: compaction.CmdNew, TextAliases: []string{"/" + compaction.CmdNew},
		Description: "Start a new session (optionally with a model or a first message).", Category: "session",
		Source: "native", Scope: "both", AcceptsArgs: true,
	},
	{
		Name: compaction.CmdReset, NativeName: compaction.CmdReset, TextAliases: []string{"/" + compaction.CmdReset},
		Description: "Reset the session (\"soft\" keeps the transcript).", Category: "session",
		Source: "native", Scope: "both", AcceptsArgs: true,
	},
	{
		Name: compaction.CmdName, NativeName: compaction.CmdName, TextAliases: []string{"/" + compaction.CmdName},
		Description: "Show or set the session's name (its label).", Category: "session",
		Source: "native", Scope: "both", AcceptsArgs: true,
	},
	{
		Name: compaction.CmdStop, NativeName: compaction.CmdStop, TextAliases: []string{"/" + compaction.CmdStop},
		Description: "Stop the session's run, its queued messages and the sub-agents it spawned.", Category: "session",
		Source: "native", Scope: "both",
	},
	{
		Name: compaction.CmdCompact, NativeName: compaction.CmdCompact, TextAliases: []string{"/" + compaction.CmdCompact},
		Description: "Compact the session's context (optional instructions).", Category: "session",
		Source: "native", Scope: "both", AcceptsArgs: true,
	},
	{
		Name: compaction.CmdContext, NativeName: compaction.CmdContext, TextAliases: []string{"/" + compaction.CmdContext},
		Description: "Show what fills the context window (list, detail, map or json).", Category: "status",
		Source: "native", Scope: "both", AcceptsArgs: true,
	},
	{
		Name: compaction.CmdStatus, NativeName: compaction.CmdStatus, TextAliases: []string{"/" + compaction.CmdStatus},
		Description: "Show the session's model, tokens, context, queue and send policy, and the gateway's version and uptime.", Category: "status",
		Source: "native", Scope: "both",
	},
	{
		Name: compaction.CmdTasks, NativeName: compaction.CmdTasks, TextAliases: []string{"/" + compaction.CmdTasks},
		Description: "List the sub-agent runs this session spawned, newest first, with their state.", Category: "status",
		Source: "native", Scope: "both",
	},
	{
		Name: compaction.CmdWhoami, NativeName: compaction.CmdWhoami, TextAliases: []string{"/" + compaction.CmdWhoami, "/id"},
		Description: "Show who the gateway takes you for: your channel, user id and allowFrom entry.", Category: "status",
		Source: "native", Scope: "both",
	},
	{
		Name: compaction.CmdHelp, NativeName: compaction.CmdHelp, TextAliases: []string{"/" + compaction.CmdHelp, "/commands"},
		Description: "List the chat commands.", Category: "status",
		Source: "native", Scope: "both",
	},
	{
		Name: compaction.CmdModel, NativeName: compaction.CmdModel, TextAliases: []string{"/" + compaction.CmdModel},
		Description: "Show or choose this session's model (provider/model, or default).", Category: "options",
		Source: "native", Scope: "both", AcceptsArgs: true,
	},
	{
		Name: compaction.CmdModels, NativeName: compaction.CmdModels, TextAliases: []string{"/" + compaction.CmdModels},
		Description: "List the configured providers, or one provider's models.", Category: "options",
		Source: "native", Scope: "both", AcceptsArgs: true,
	},
	{
		Name: "think", NativeName: "think", TextAliases: []string{"/think", "/thinking", "/t"},
		Description: "Show or set this session's thinking level (off, minimal, low, medium, high, xhigh, adaptive, or default).", Category: "options",
		Source: "native", Scope: "both", AcceptsArgs: true,
	},
	{
		Name: "send", NativeName: "send", TextAliases: []string{"/send"},
		Description: "Set this session's send policy: on, off or inherit.", Category: "options",
		Source: "native", Scope: "both", AcceptsArgs: true,
	},
	{
		Name: "queue", NativeName: "queue", TextAliases: []string{"/queue"},
		Description: "Set how messages wait while a run is busy (a mode, debounce, cap; or reset).", Category: "options",
		Source: "native", Scope: "both", AcceptsArgs: true,
	},
	{
		Name: "elevated", NativeName: "elevated", TextAliases: []string{"/elevated"},
		Description: "Let a sandboxed session's exec run on the host: on, off, ask or full (tools.elevated must allow you).", Category: "options",
		Source: "native", Scope: "both", AcceptsArgs: true,
	},
}

func (s *Server) handleChatMetadata(ctx context.Context, cl *call) (any, error) {
	var p struct{ AgentID, SessionKey string }
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	if p.AgentID != "" && !s.knownAgent(s.agentID(p.AgentID)) {
		return nil, unknownAgent(s.agentID(p.AgentID))
	}
	res := wire.ChatMetadataResult{Models: []map[string]any{}, Commands: chatCommands}
	for _, m := range s.catalog() {
		res.Models = append(res.Models, modelRow(m))
	}
	return res, nil
}

func (s *Server) handleSystemInfo(ctx context.Context, cl *call) (any, error) {
	if err := cl.decode(nil); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	res := wire.SystemInfoResult{
		MachineName: host, Hostname: host,
		Platform: nodePlatform(runtime.GOOS), Arch: nodeArch(runtime.GOARCH),
		NodeVersion: runtime.Version(), PID: os.Getpid(), ProcessInstanceID: s.instanceID,
		UptimeMs: s.now().Sub(s.started).Milliseconds(), CPUCount: runtime.NumCPU(),
		UtilityModel: wire.StatusOnly{Status: "unavailable"},
	}
	if a, ok := cl.c.local.(*net.TCPAddr); ok {
		res.Port = a.Port
	}
	res.Release = strings.TrimSpace(readSmall("/proc/sys/kernel/osrelease"))
	res.OSLabel = strings.TrimSpace(osLabel(runtime.GOOS) + " " + res.Release)
	res.LoadAverage = loadAverage(readSmall("/proc/loadavg"))
	res.MemoryTotalBytes, res.MemoryFreeBytes = memInfo(readSmall("/proc/meminfo"))
	if dir := s.cfg.StateDir; dir != "" {
		if total, avail, ok := diskSpace(dir); ok {
			res.DiskTotalBytes, res.DiskAvailableBytes, res.DiskPath = total, avail, dir
		}
	}
	return res, nil
}

// readSmall returns the file's content, "" when it cannot be read (the
// /proc files system.info reads exist on Linux only).
func readSmall(name string) string {
	b, err := os.ReadFile(name)
	if err != nil {
		return ""
	}
	return string(b)
}

// loadAverage parses /proc/loadavg's first three fields; nil when absent.
func loadAverage(s string) []float64 {
	f := strings.Fields(s)
	if len(f) < 3 {
		return nil
	}
	out := make([]float64, 3)
	for i := range out {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return nil
		}
		out[i] = v
	}
	return out
}

// memInfo returns MemTotal and MemAvailable from /proc/meminfo, in bytes.
func memInfo(s string) (total, free int64) {
	sc := bufio.NewScanner(bytes.NewReader([]byte(s)))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch name {
		case "MemTotal":
			total = kb << 10
		case "MemAvailable":
			free = kb << 10
		}
	}
	return total, free
}

// nodePlatform and nodeArch name the OS and CPU as Node's process.platform
// and os.arch() do, which the UI shows and matches on.
func nodePlatform(goos string) string {
	if goos == "windows" {
		return "win32"
	}
	return goos
}

func nodeArch(goarch string) string {
	switch goarch {
	case "amd64":
		return "x64"
	case "386":
		return "ia32"
	}
	return goarch
}

func osLabel(goos string) string {
	switch goos {
	case "linux":
		return "Linux"
	case "darwin":
		return "macOS"
	case "windows":
		return "Windows"
	}
	return goos
}

// handleEnvironmentsList lists the one place Switchboard runs sessions:
// the gateway's own host.
func (s *Server) handleEnvironmentsList(ctx context.Context, cl *call) (any, error) {
	if err := cl.decode(nil); err != nil {
		return nil, err
	}
	return wire.EnvironmentsListResult{Environments: []wire.Environment{{
		ID: "gateway", Type: "local", Label: "Gateway local", Status: "available",
		Platform: nodePlatform(runtime.GOOS), SessionHost: true, Trust: "persistent",
		Capabilities: []string{"agent.run", "sessions", "tools", "workspace"},
	}}}, nil
}

// handleNodeList: Switchboard pairs no nodes.
func (s *Server) handleNodeList(ctx context.Context, cl *call) (any, error) {
	if err := cl.decode(nil); err != nil {
		return nil, err
	}
	return wire.NodeListResult{TS: s.now().UnixMilli(), Nodes: []any{}}, nil
}

// SkillsSource is what skills.status needs: an agent's skills with their
// gates, and the SKILL.md files refused.
type SkillsSource interface {
	Status(agentID string) ([]skills.Status, []skills.Problem)
}

// handleSkillsStatus lists an agent's skills as the reference does
// (discovered in its workspace, the state dir and skills.load.extraDirs).
func (s *Server) handleSkillsStatus(ctx context.Context, cl *call) (any, error) {
	var p struct{ AgentID, SessionKey string }
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	id := s.agentID(p.AgentID)
	if p.AgentID == "" && p.SessionKey != "" {
		if a := agentOfKey(s.canonicalKey(p.SessionKey, ""), ""); a != "" {
			id = a
		}
	}
	if !s.knownAgent(id) {
		return nil, unknownAgent(id)
	}
	res := wire.SkillsStatusResult{
		WorkspaceDir:     s.conf.Agent(id).Workspace,
		ManagedSkillsDir: filepath.Join(s.conf.StateDir, "skills"),
		AgentID:          id,
		Skills:           []any{},
	}
	if s.cfg.Skills != nil {
		list, problems := s.cfg.Skills.Status(id)
		for _, st := range list {
			res.Skills = append(res.Skills, st)
		}
		for _, pr := range problems {
			s.log.Debug("skills: SKILL.md refused", "path", pr.Path, "reason", pr.Message)
		}
	}
	return res, nil
}

// handleUpdateStatus: Switchboard does not update itself, so no update is
// ever staged or known.
func (s *Server) handleUpdateStatus(ctx context.Context, cl *call) (any, error) {
	if err := cl.decode(nil); err != nil {
		return nil, err
	}
	return wire.UpdateStatusResult{}, nil
}

// defaultTasksLimit is tasks.list's limit when none is given.
const defaultTasksLimit = 100

// handleTasksList lists sub-agent runs as the reference lists its
// detached tasks: under sessionKey, those it spawned; newest first, or
// by end time with sortBy "endedAt".
func (s *Server) handleTasksList(ctx context.Context, cl *call) (any, error) {
	var p struct {
		Status     json.RawMessage `json:"status"`
		AgentID    string          `json:"agentId"`
		SessionKey string          `json:"sessionKey"`
		Limit      int             `json:"limit"`
		SortBy     string          `json:"sortBy"`
	}
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	want, err := taskStatuses(p.Status)
	if err != nil {
		return nil, err
	}
	res := wire.TasksListResult{Tasks: []wire.Task{}}
	if s.cfg.Subagents == nil {
		return res, nil
	}
	requester := ""
	if p.SessionKey != "" {
		requester = s.canonicalKey(p.SessionKey, "")
	}
	agent := ""
	if p.AgentID != "" && p.SessionKey == "" {
		agent = s.agentID(p.AgentID)
	}
	limit := cmp.Or(p.Limit, defaultTasksLimit)
	// Only running children asked for: the registry filters them.
	active := len(want) > 0 && !slices.ContainsFunc(want, func(st string) bool { return st != "queued" && st != "running" })
	readLimit := 0 // filtered here: read them all
	if len(want) == 0 && agent == "" && p.SortBy != "endedAt" {
		readLimit = limit
	}
	infos, _, err := s.cfg.Subagents.List(ctx, requester, active, readLimit)
	if err != nil {
		return nil, fmt.Errorf("tasks.list: %w", err)
	}
	for i := range infos {
		t := taskOf(&infos[i])
		if agent != "" && infos[i].AgentID != agent || len(want) > 0 && !slices.Contains(want, t.Status) {
			continue
		}
		res.Tasks = append(res.Tasks, t)
	}
	if p.SortBy == "endedAt" {
		slices.SortStableFunc(res.Tasks, func(a, b wire.Task) int { return cmp.Compare(b.EndedAt, a.EndedAt) })
	}
	if len(res.Tasks) > limit {
		res.Tasks = res.Tasks[:limit]
	}
	return res, nil
}

// taskStatuses reads tasks.list's status: absent, one status or a list.
func taskStatuses(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		var one string
		if json.Unmarshal(raw, &one) != nil {
			return nil, invalid("invalid tasks.list params: status must be a string or an array of strings")
		}
		list = []string{one}
	}
	for _, st := range list {
		if !slices.Contains(wire.TaskStatuses, st) {
			return nil, invalid("invalid tasks.list params: unknown status " + strconv.Quote(st))
		}
	}
	return list, nil
}

// taskOf is a sub-agent run as a tasks.list row.
func taskOf(in *subagent.Info) wire.Task {
	r := &in.Record
	task, _ := firstLine(r.Task, 120)
	t := wire.Task{
		ID: r.ChildRunID, Kind: "subagent", Runtime: "subagent", RunID: r.ChildRunID,
		Title: cmp.Or(r.Label, task), AgentID: r.AgentID,
		SessionKey: r.RequesterKey, OwnerKey: r.RequesterKey, ChildSessionKey: r.ChildSessionKey,
		CreatedAt: r.CreatedAt, StartedAt: in.StartedAt, EndedAt: in.EndedAt, Error: in.Error, Prompt: r.Task,
	}
	switch in.RunStatus {
	case "running":
		t.Status = "running"
	case "ok":
		t.Status = "completed"
	case "error":
		t.Status = "failed"
	case "timeout":
		t.Status = "timed_out"
	case "aborted":
		t.Status = "cancelled"
	default:
		t.Status = "queued"
	}
	switch in.AnnounceStatus {
	case "pending", "delivered":
		t.DeliveryStatus = in.AnnounceStatus
	case "dead":
		t.DeliveryStatus = "failed"
	}
	return t
}

// firstLine is s's first line, trimmed and cut to at most max runes
// (ending in "…" when cut).
func firstLine(s string, max int) (line string, cut bool) {
	line, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(line); len(r) > max {
		return string(r[:max-1]) + "…", true
	}
	return line, false
}
