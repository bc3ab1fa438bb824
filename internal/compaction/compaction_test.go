package compaction

import (
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
)

func TestResolveWindowAndGuard(t *testing.T) {
	tests := []struct {
		ctxTokens, ctxWindow int
		want                 int
		source               Source
		blocked, warned      bool
	}{
		{0, 0, DefaultWindowTokens, SourceDefault, false, false},
		{0, 100000, 100000, SourceModelsConfig, false, false},
		{50000, 100000, 50000, SourceModelsConfig, false, false},
		{0, 3999, 3999, SourceModelsConfig, true, true},
		{0, 4000, 4000, SourceModelsConfig, false, true},
		{0, 7999, 7999, SourceModelsConfig, false, true},
		{0, 8000, 8000, SourceModelsConfig, false, false},
		{-5, 0, DefaultWindowTokens, SourceDefault, false, false},
	}
	for _, tt := range tests {
		w := ResolveWindow(tt.ctxTokens, tt.ctxWindow)
		if w.Tokens != tt.want || w.Source != tt.source {
			t.Errorf("ResolveWindow(%d, %d) = %+v", tt.ctxTokens, tt.ctxWindow, w)
		}
		if got := w.Blocked() != ""; got != tt.blocked {
			t.Errorf("window %d blocked = %v", w.Tokens, got)
		}
		if got := w.Warning("p/m") != ""; got != tt.warned {
			t.Errorf("window %d warned = %v", w.Tokens, got)
		}
	}
	if got, want := ResolveWindow(0, 3000).Blocked(), "Model context window too small (3000 tokens; source=modelsConfig). Minimum is 4000."; got != want {
		t.Errorf("Blocked = %q, want %q", got, want)
	}
	if got, want := ResolveWindow(0, 6000).Warning("local/x"), "low context window: local/x ctx=6000 (warn<8000) source=modelsConfig"; got != want {
		t.Errorf("Warning = %q, want %q", got, want)
	}
}

func TestReserve(t *testing.T) {
	tests := []struct{ window, reserve, want int }{
		{100000, 0, 20000},
		{80000, 0, 20000},
		{40000, 0, 10000},
		{100000, 30000, 25000},
		{100000, 5000, 5000},
	}
	for _, tt := range tests {
		if got := Reserve(tt.window, tt.reserve); got != tt.want {
			t.Errorf("Reserve(%d, %d) = %d, want %d", tt.window, tt.reserve, got, tt.want)
		}
	}
	if got := Threshold(100000, 0); got != 80000 {
		t.Errorf("Threshold = %d", got)
	}
}

func TestFormatTokens(t *testing.T) {
	tests := map[int]string{0: "0", 950: "950", 1000: "1.0k", 3149: "3.1k", 12345: "12k", 67000: "67k", 999999: "1.0m", 1200000: "1.2m", -3: "0"}
	for n, want := range tests {
		if got := FormatTokens(n); got != want {
			t.Errorf("FormatTokens(%d) = %q, want %q", n, got, want)
		}
	}
	if got, want := CompactedReply(true, "", 91000, 3100, 100000), "⚙️ Compacted (91k → 3.1k) • Context 3.1k/100k (3%)"; got != want {
		t.Errorf("CompactedReply = %q, want %q", got, want)
	}
	skipped := []struct{ reason, want string }{
		{"", "⚙️ Compaction skipped • Context 500/100k (1%)"},
		{"nothing to compact: the session is already compacted", "⚙️ Compaction skipped: the session is already compacted • Context 500/100k (1%)"},
		{"below threshold", "⚙️ Compaction skipped: below threshold • Context 500/100k (1%)"},
	}
	for _, tc := range skipped {
		if got := CompactedReply(false, tc.reason, 500, 0, 100000); got != tc.want {
			t.Errorf("CompactedReply skipped (%q) = %q, want %q", tc.reason, got, tc.want)
		}
	}
}

func TestIsOverflow(t *testing.T) {
	yes := []string{
		`400 {"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		"openai: 400 Bad Request: context_length_exceeded",
		"anthropic: 400 invalid_request_error: prompt is too long: 210000 tokens > 200000 maximum",
		"request_too_large: Request exceeds the maximum size",
		"Input is too long for the model",
		"ValidationException: Input token count exceeds the maximum number of input tokens",
		"input exceeds the maximum number of tokens",
		"ollama error: context length exceeded",
		"Context overflow: prompt too large for the model.",
		"the request exceeds the available context size, try increasing it",
	}
	no := []string{
		"",
		"rate limit reached for gpt-4 in organization: tokens per min (TPM): Limit 30000, Requested 50000",
		"500 internal server error",
		"invalid api key",
		"max_tokens is too large",
	}
	for _, s := range yes {
		if !IsOverflow(s) {
			t.Errorf("IsOverflow(%q) = false", s)
		}
	}
	for _, s := range no {
		if IsOverflow(s) {
			t.Errorf("IsOverflow(%q) = true", s)
		}
	}
}

func u(n int) Item { return Item{Kind: KindUser, Tokens: n} }
func a(n int, calls ...string) Item {
	return Item{Kind: KindAssistant, Tokens: n, CallIDs: calls}
}
func r(n int, id string) Item { return Item{Kind: KindToolResult, Tokens: n, ResultFor: id} }

func TestCut(t *testing.T) {
	tests := []struct {
		name          string
		items         []Item
		keep, maxTail int
		want          int
	}{
		{"empty", nil, 10, 0, 0},
		{"all fits: nothing to summarise", []Item{u(1), a(1), u(1), a(1)}, 100, 0, 0},
		{"keeps the recent budget", []Item{u(10), a(10), u(10), a(10), u(10), a(10)}, 20, 0, 4},
		{"cut lands on a user message when the budget ends on one", []Item{u(10), a(10), u(10), a(10)}, 15, 0, 2},
		{"a tool pair is summarised whole", []Item{u(10), a(10, "c1"), r(50, "c1"), a(5)}, 20, 0, 3},
		{"never at a result: moves back to the call", []Item{u(10), a(10, "c1"), r(50, "c1"), a(5)}, 56, 0, 1},
		{"an assistant message between a call and its result is not a cut point", []Item{u(10), a(10, "c1"), a(10), r(10, "c1"), u(5)}, 20, 0, 4},
		{"two results of one call stay together", []Item{u(10), a(10, "c1", "c2"), r(30, "c1"), r(30, "c2"), u(5)}, 70, 0, 1},
		{"non-message entries weigh nothing and are never cut at", []Item{u(10), {Kind: ""}, a(10), u(10)}, 10, 0, 3},
		{"max tail moves the cut later", []Item{u(10), a(10), u(10), a(10), u(10), a(10)}, 60, 25, 4},
		{"max tail skips a tool pair it cannot split", []Item{u(10), a(10, "c"), r(100, "c"), u(10), a(10)}, 200, 50, 3},
		{"no tail fits", []Item{u(10), a(100)}, 10, 50, 2},
		{"unpaired result (call cut away earlier) does not block", []Item{r(10, "gone"), u(10), a(10)}, 10, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Cut(tt.items, tt.keep, tt.maxTail); got != tt.want {
				t.Errorf("Cut = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestEstimateAndCalibrate(t *testing.T) {
	req := &provider.Request{System: strings.Repeat("s", 40), Messages: []provider.Message{
		{Role: provider.RoleUser, Text: strings.Repeat("x", 400)},
		{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "c", Name: "read", Arguments: []byte(`{"p":1}`)}}},
	}}
	est := RequestTokens(req)
	if est != 10+100+4+3+4 {
		t.Errorf("RequestTokens = %d", est)
	}
	var c Calibrator
	if got := c.Scale("m", 100); got != 100 {
		t.Errorf("uncalibrated Scale = %d", got)
	}
	c.Observe("m", 100, 150)
	if got := c.Scale("m", 100); got != 150 {
		t.Errorf("Scale after one observation = %d, want 150", got)
	}
	c.Observe("m", 100, 150)
	c.Observe("m", 0, 99) // ignored
	if got := c.Scale("m", 1000); got != 1500 {
		t.Errorf("Scale = %d, want 1500", got)
	}
	c.Observe("huge", 1, 1000)
	if got := c.Ratio("huge"); got != 4 {
		t.Errorf("ratio clamp = %v", got)
	}
	if got := c.Ratio("other"); got != 1 {
		t.Errorf("other model ratio = %v", got)
	}
}

func TestPrompts(t *testing.T) {
	msgs := []provider.Message{
		{Role: provider.RoleUser, Text: "fix bug ID-42"},
		{Role: provider.RoleAssistant, Text: "looking", ToolCalls: []provider.ToolCall{{Name: "read", Arguments: []byte(`{"path":"a.go"}`)}}},
		{Role: provider.RoleTool, Text: strings.Repeat("r", 3000)},
	}
	def := BuildRequest(PromptInput{Mode: ModeDefault, Messages: msgs, Instructions: "focus on APIs"}, "m", 100)
	text := def.Messages[0].Text
	for _, want := range []string{"<conversation>\n[User]: fix bug ID-42\n\n[Assistant]: looking\n\n[Assistant tool calls]: read(path=\"a.go\")\n\n[Tool result]: rrr", "Use this EXACT format:\n\n## Goal", "Additional focus: focus on APIs"} {
		if !strings.Contains(text, want) {
			t.Errorf("default prompt lacks %q", want)
		}
	}
	if def.System != SystemPrompt || strings.Count(text, "r") > 2200 {
		t.Errorf("system or tool result truncation wrong")
	}
	upd := BuildRequest(PromptInput{Mode: ModeDefault, Messages: msgs, PreviousSummary: "old"}, "m", 100).Messages[0].Text
	if !strings.Contains(upd, "<previous-summary>\nold\n</previous-summary>") || !strings.Contains(upd, "NEW conversation messages") {
		t.Errorf("update prompt wrong: %q", upd[len(upd)-200:])
	}
	sg := BuildRequest(PromptInput{Mode: ModeSafeguard, Messages: msgs, LatestRequest: "fix bug ID-42", PreviousSummary: "old"}, "m", 100).Messages[0].Text
	for _, want := range append(RequiredSections, strictIdentifiers, redistilPrompt, LatestRequestMarker+"\nfix bug ID-42\n"+UntrustedEnd) {
		if !strings.Contains(sg, want) {
			t.Errorf("safeguard prompt lacks %q", want)
		}
	}
}

func TestAuditAssembleParse(t *testing.T) {
	good := "## Decisions\n- x\n## Open TODOs\n- y\n## Constraints/Rules\n- z\n## Pending user asks\n- fix bug ID-42\n## Exact identifiers\n- ID-42"
	if got := Audit(good, "fix bug ID-42"); got != "" {
		t.Errorf("Audit(good) = %q", got)
	}
	if got := Audit(good, "something else"); got == "" {
		t.Error("Audit accepted a summary without the latest ask")
	}
	if got := Audit(strings.Replace(good, "## Open TODOs", "## TODO", 1), ""); got == "" {
		t.Error("Audit accepted a missing heading")
	}
	swapped := "## Open TODOs\n## Decisions\n## Constraints/Rules\n## Pending user asks\n## Exact identifiers"
	if Audit(swapped, "") == "" {
		t.Error("Audit accepted headings out of order")
	}
	s := Assemble(good, "fix \"bug\"\nID-42")
	if !strings.HasPrefix(s, "## Latest unresolved user request\n\"fix \\\"bug\\\"\\nID-42\"\n\n## Decisions") {
		t.Errorf("Assemble = %q", s)
	}
	latest, body := ParseSummary(s)
	if latest != "fix \"bug\"\nID-42" || body != good {
		t.Errorf("ParseSummary = %q, %q", latest, body)
	}
	big := Assemble(strings.Repeat("é", MaxSummaryChars), "")
	if len(big) > MaxSummaryChars || !strings.HasSuffix(big, truncatedMarker) {
		t.Errorf("Assemble did not cap: %d", len(big))
	}
	if l := LatestRequest(strings.Repeat("a", 2000)); len(l) > 820 || !strings.Contains(l, "truncated") {
		t.Errorf("LatestRequest = %d chars", len(l))
	}
}

func TestParseCommand(t *testing.T) {
	tests := []struct {
		in   string
		ok   bool
		want Command
	}{
		{"/compact", true, Command{Kind: CmdCompact}},
		{"  /compact  Focus on the API design  ", true, Command{Kind: CmdCompact, Rest: "Focus on the API design"}},
		{"/COMPACT x", true, Command{Kind: CmdCompact, Rest: "x"}},
		{"/compaction", false, Command{}},
		{"/new", true, Command{Kind: CmdNew}},
		{"/new openai/gpt-4.1 hello", true, Command{Kind: CmdNew, Rest: "openai/gpt-4.1 hello"}},
		{"/reset", true, Command{Kind: CmdReset}},
		{"/reset soft", true, Command{Kind: CmdReset, Soft: true}},
		{"/reset soft  carry on\nplease", true, Command{Kind: CmdReset, Soft: true, Rest: "carry on\nplease"}},
		{"/reset hello there", true, Command{Kind: CmdReset, Rest: "hello there"}},
		{"/reset softly", true, Command{Kind: CmdReset, Rest: "softly"}},
		{"please /reset", false, Command{}},
		{"/context json", true, Command{Kind: CmdContext, Rest: "json"}},
		{"/help", true, Command{Kind: CmdHelp}},
		{"/Commands", true, Command{Kind: CmdHelp}},
		{"/status", true, Command{Kind: CmdStatus}},
		{"/statusbar", false, Command{}},
		{"/status:", true, Command{Kind: CmdStatus}},
		{"/compact: focus on X", true, Command{Kind: CmdCompact, Rest: "focus on X"}},
		{"/:", false, Command{}},
		{"what is my /status", false, Command{}},
		{"/model", true, Command{Kind: CmdModel}},
		{"/model openai/gpt-4.1 -s", true, Command{Kind: CmdModel, Rest: "openai/gpt-4.1 -s"}},
		{"/Models openai", true, Command{Kind: CmdModels, Rest: "openai"}},
		{"/modelx", false, Command{}},
		{"/think high", false, Command{}}, // policy.ParseThinkCommand's
		{"/t", false, Command{}},
		{"/stop", true, Command{Kind: CmdStop}},
		{" /STOP: ", true, Command{Kind: CmdStop}},
		{"/stop it now", false, Command{}},
		{"stop", false, Command{}}, // policy.IsAbortTrigger's
		{"/whoami", true, Command{Kind: CmdWhoami}},
		{"/ID", true, Command{Kind: CmdWhoami}},
		{"/idea", false, Command{}},
		{"/name  Release notes  ", true, Command{Kind: CmdName, Rest: "Release notes"}},
		{"/tasks", true, Command{Kind: CmdTasks}},
		{"/", false, Command{}},
		{"", false, Command{}},
	}
	for _, tt := range tests {
		got, ok := ParseCommand(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseCommand(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{"/compact x", "/reset soft hi", "/new m", "/RESET\tSOFT\n", "/\u00a0x", "/model x hi", "/models a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := ParseCommand(s)
		if !ok {
			return
		}
		switch c.Kind {
		case CmdCompact, CmdNew, CmdReset, CmdContext, CmdHelp, CmdStatus, CmdModel, CmdModels, CmdStop, CmdWhoami, CmdName, CmdTasks:
		default:
			t.Fatalf("kind %q", c.Kind)
		}
		if c.Soft && c.Kind != CmdReset {
			t.Fatal("soft on a non-reset")
		}
		if c.Rest != strings.TrimSpace(c.Rest) {
			t.Fatalf("rest not trimmed: %q", c.Rest)
		}
	})
}

func FuzzParseSummary(f *testing.F) {
	f.Add("## Latest unresolved user request\n\"x\"\n\nbody")
	f.Add("## Latest unresolved user request\nnot json\nbody")
	f.Add("plain")
	f.Fuzz(func(t *testing.T, s string) {
		latest, body := ParseSummary(s)
		if latest == "" {
			return
		}
		// A summary that parsed re-assembles to itself when it is within
		// the cap and its body is already trimmed.
		if re := Assemble(body, latest); len(s) < MaxSummaryChars && body == strings.TrimSpace(body) && strings.HasPrefix(s, "## Latest") {
			l2, b2 := ParseSummary(re)
			if l2 != latest || b2 != body {
				t.Fatalf("round trip: %q -> %q / %q", s, l2, b2)
			}
		}
	})
}

func TestResetRuleStale(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name         string
		rule         ResetRule
		started, act string
		now          string
		reason       string
	}{
		{"none never", ResetRule{Mode: ResetNone, IdleMinutes: 1}, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", "2026-03-01T00:00:00Z", ""},
		{"daily: started before today's 4:00", ResetRule{Mode: ResetDaily, AtHour: 4}, "2026-01-01T03:59:00Z", "2026-01-01T03:59:00Z", "2026-01-01T04:00:00Z", ResetDaily},
		{"daily: started after today's 4:00", ResetRule{Mode: ResetDaily, AtHour: 4}, "2026-01-01T04:00:00Z", "2026-01-01T04:00:00Z", "2026-01-01T23:00:00Z", ""},
		{"daily: before 4:00 the boundary is yesterday's", ResetRule{Mode: ResetDaily, AtHour: 4}, "2025-12-31T05:00:00Z", "2025-12-31T05:00:00Z", "2026-01-01T03:00:00Z", ""},
		{"daily: yesterday before 4:00", ResetRule{Mode: ResetDaily, AtHour: 4}, "2025-12-31T03:00:00Z", "2025-12-31T03:00:00Z", "2026-01-01T03:00:00Z", ResetDaily},
		{"idle: expired", ResetRule{Mode: ResetIdle, IdleMinutes: 120}, "2026-01-01T00:00:00Z", "2026-01-01T10:00:00Z", "2026-01-01T12:01:00Z", ResetIdle},
		{"idle: fresh", ResetRule{Mode: ResetIdle, IdleMinutes: 120}, "2026-01-01T00:00:00Z", "2026-01-01T10:00:00Z", "2026-01-01T11:59:00Z", ""},
		{"daily with idle: idle expires first", ResetRule{Mode: ResetDaily, AtHour: 4, IdleMinutes: 10}, "2026-01-01T05:00:00Z", "2026-01-01T05:00:00Z", "2026-01-01T05:11:00Z", ResetIdle},
	}
	for _, tt := range tests {
		reason, stale := tt.rule.Stale(at(tt.started), at(tt.act), at(tt.now))
		if reason != tt.reason || stale != (tt.reason != "") {
			t.Errorf("%s: Stale = %q, %v; want %q", tt.name, reason, stale, tt.reason)
		}
	}
}

func TestPrune(t *testing.T) {
	tokens := func(msgs []provider.Message) int {
		n := 0
		for i := range msgs {
			n += MessageTokens(&msgs[i])
		}
		return n
	}
	tool := func(name string, n int) provider.Message {
		return provider.Message{Role: provider.RoleTool, ToolName: name, ToolCallID: "c", Text: strings.Repeat("t", n)}
	}
	call := provider.Message{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "c", Name: "read"}}}
	user := provider.Message{Role: provider.RoleUser, Text: "go"}
	boot := tool("read", 9000) // before the first user message: protected
	conv := []provider.Message{boot, user, call, tool("read", 9000), call, tool("exec", 30000), call, tool("read", 30000),
		call, tool("read", 9000), call, tool("read", 9000), call, tool("read", 9000)}
	// 25k estimated tokens.
	tests := []struct {
		name             string
		o                PruneOptions
		trimmed, cleared int
	}{
		{"under 30% of the window: nothing", PruneOptions{Window: 100000}, 0, 0},
		{"soft trim only (hard clear off)", PruneOptions{Window: 40000}, 3, 0},
		{"soft trim leaves under 50%", PruneOptions{Window: 40000, HardClear: true}, 3, 0},
		{"deny scopes the tools", PruneOptions{Window: 40000, Deny: []string{"exec"}}, 2, 0},
		{"allow scopes the tools", PruneOptions{Window: 40000, Allow: []string{"exec"}}, 1, 0},
	}
	for _, tt := range tests {
		tt.o.Tokens = tokens
		out, st := Prune(conv, tt.o)
		if st.Trimmed != tt.trimmed || st.Cleared != tt.cleared {
			t.Errorf("%s: %+v, want trimmed %d cleared %d", tt.name, st, tt.trimmed, tt.cleared)
		}
		if out[0].Text != boot.Text || out[len(out)-1].Text != conv[len(conv)-1].Text || out[len(out)-3].Text != conv[len(conv)-3].Text {
			t.Errorf("%s: a protected result changed", tt.name)
		}
	}
	if conv[3].Text != strings.Repeat("t", 9000) {
		t.Fatal("Prune modified its input")
	}
	out, _ := Prune(conv, PruneOptions{Window: 40000, Tokens: tokens})
	if got := out[3].Text; len(got) != 3005 || !strings.Contains(got, "\n...\n") {
		t.Errorf("soft trim = %d chars", len(got))
	}
	// A prompt still over half the window with 50k+ prunable characters
	// after trimming: hard clear.
	var big []provider.Message
	big = append(big, user)
	for range 20 {
		big = append(big, call, tool("read", 3900))
	}
	big = append(big, call, tool("read", 10), call, tool("read", 10), call, tool("read", 10))
	out, st := Prune(big, PruneOptions{Window: 30000, Tokens: tokens, HardClear: true, Placeholder: "[gone]"})
	if st.Cleared != 20 || out[2].Text != "[gone]" || out[len(out)-1].Text == "[gone]" {
		t.Errorf("hard clear: %+v, first %q", st, out[2].Text)
	}
}

func TestPreserveTurns(t *testing.T) {
	u := Item{Kind: KindUser, Tokens: 10}
	a := Item{Kind: KindAssistant, Tokens: 10}
	items := []Item{u, a, u, a, u, a, u, a} // four turns: users at 0, 2, 4, 6
	tests := []struct {
		name                   string
		cut, turns, maxTail, w int
	}{
		{"keeps the last three turns", 6, 3, 0, 2},
		{"cut already earlier", 1, 3, 0, 1},
		{"off", 6, 0, 0, 6},
		{"fewer turns than asked: everything verbatim", 6, 9, 0, 0},
		{"tail bound wins", 6, 3, 45, 6},
		{"tail bound allows it", 6, 3, 60, 2},
		{"nothing to summarise", 0, 3, 0, 0},
	}
	for _, tt := range tests {
		if got := PreserveTurns(items, tt.cut, tt.turns, tt.maxTail); got != tt.w {
			t.Errorf("%s: PreserveTurns(cut %d, turns %d, maxTail %d) = %d, want %d", tt.name, tt.cut, tt.turns, tt.maxTail, got, tt.w)
		}
	}
}
