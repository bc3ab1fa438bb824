package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/provider/scripted"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/telemetry"
)

// TestOneTracePerChain drives a model-driven sessions_send and a
// sessions_spawn through the real gateway protocol and checks that every
// run they lead to, with its model and tool calls, lands in one trace whose
// id is derived from the chain's id.
func TestOneTracePerChain(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "test-key"})
	dir := t.TempDir()
	cfg := fmt.Sprintf(`{
  models: { mode: "replace", providers: { fake: { baseUrl: %q, apiKey: "test-key", api: "openai-completions", models: [{ id: "fake-1" }] } } },
  agents: { defaults: { model: { primary: "fake/fake-1" } } },
  tools: { sessions: { visibility: "all" } },
  session: { agentToAgent: { maxPingPongTurns: 1 } },
}`, llm.URL())
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	_, exp, c := startTraced(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	msg := scripted.ToolDirective("sessions_send", map[string]any{"sessionKey": "agent:main:worker", "message": "hello worker", "timeoutSeconds": 20}) + "\n" +
		scripted.ToolDirective("sessions_spawn", map[string]any{"task": "child task"}) + "\n" +
		scripted.ThenDirective("all done")
	var sent map[string]any
	if err := c.Call(ctx, "chat.send", map[string]any{"sessionKey": "agent:main:main", "message": msg, "idempotencyKey": "root-1"}, &sent); err != nil {
		t.Fatal(err)
	}
	rootRun, _ := sent["runId"].(string)
	if rootRun == "" {
		t.Fatalf("chat.send = %v", sent)
	}
	want := telemetry.TraceID(rootRun)

	// The spans of every run the chain led to, by name.
	type seen struct{ runs, names map[string]bool }
	collect := func() (seen, []string) {
		s := seen{runs: map[string]bool{}, names: map[string]bool{}}
		var other []string
		for _, sp := range exp.GetSpans() {
			if sp.SpanContext.TraceID() != want {
				other = append(other, sp.Name)
				continue
			}
			s.names[sp.Name] = true
			if strings.HasPrefix(sp.Name, "invoke_agent") {
				for _, a := range sp.Attributes {
					if string(a.Key) == telemetry.AttrSessionKey {
						s.runs[a.Value.AsString()] = true
					}
				}
			}
		}
		return s, other
	}
	var s seen
	var other []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, other = collect()
		child := false
		for k := range s.runs {
			child = child || strings.Contains(k, ":subagent:")
		}
		if s.runs["agent:main:main"] && s.runs["agent:main:worker"] && child &&
			s.names["subagent.announce"] && s.names["sessions_send.announce"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("chain trace incomplete: runs %v, spans %v; spans in other traces: %v", s.runs, s.names, other)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, name := range []string{"chat fake-1", "execute_tool sessions_send", "execute_tool sessions_spawn", "sessions_spawn", "sessions_send.step"} {
		if !s.names[name] {
			t.Errorf("trace lacks span %q (has %v)", name, s.names)
		}
	}
	if len(other) > 0 {
		t.Errorf("spans outside the chain's trace: %v", other)
	}

	// Parentage: the worker's first run sits under the sessions_send call,
	// the child's run under the spawn step, the root run is the root.
	spans := exp.GetSpans()
	byID := map[string]tracetest.SpanStub{}
	for _, sp := range spans {
		byID[sp.SpanContext.SpanID().String()] = sp
	}
	attr := func(sp tracetest.SpanStub, key string) string {
		for _, a := range sp.Attributes {
			if string(a.Key) == key {
				return a.Value.String()
			}
		}
		return ""
	}
	for _, sp := range spans {
		if !strings.HasPrefix(sp.Name, "invoke_agent") {
			continue
		}
		parent := byID[sp.Parent.SpanID().String()]
		switch key := attr(sp, telemetry.AttrSessionKey); {
		case attr(sp, telemetry.AttrRunID) == rootRun:
			if sp.Parent.IsValid() {
				t.Errorf("root run has parent %v", sp.Parent)
			}
			if attr(sp, telemetry.AttrStatus) != "ok" || attr(sp, telemetry.AttrChainHops) != "0" {
				t.Errorf("root run attributes %v", sp.Attributes)
			}
		case key == "agent:main:worker" && attr(sp, telemetry.AttrChainHops) == "1" && !strings.Contains(attr(sp, telemetry.AttrRunID), ":"):
			if parent.Name != "execute_tool sessions_send" {
				t.Errorf("worker run's parent = %q", parent.Name)
			}
		case strings.Contains(key, ":subagent:"):
			if parent.Name != "sessions_spawn" {
				t.Errorf("child run's parent = %q", parent.Name)
			}
		}
	}
}

// startTraced starts a daemon on dir whose spans go to a fresh in-memory
// exporter.
func startTraced(t *testing.T, dir string) (*Daemon, *tracetest.InMemoryExporter, *client.Client) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := telemetry.NewProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	port := 0
	d, err := Start(context.Background(), Options{
		Env:            config.MapEnv(map[string]string{"SWITCHBOARD_STATE_DIR": dir, "HOME": dir}),
		Port:           &port,
		Stdout:         io.Discard,
		Logger:         slog.New(slog.DiscardHandler),
		ShutdownGrace:  200 * time.Millisecond,
		TracerProvider: tp,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	tok, _, err := config.LoadOrCreateGatewayToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{URL: "ws://" + d.Addrs[0].String(), Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return d, exp, c
}

// TestChainTraceSurvivesRestart: a run of a chain still queued when the
// gateway stops runs after the restart in the chain's trace, under the
// sessions_send call that queued it before the restart.
func TestChainTraceSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := `{
  agents: { defaults: { model: { primary: "scripted/echo-1" } } },
  tools: { sessions: { visibility: "all" } },
  session: { agentToAgent: { maxPingPongTurns: 0 } },
}`
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d, exp, c := startTraced(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	send := func(key, msg, idem string) string {
		t.Helper()
		var res map[string]any
		if err := c.Call(ctx, "chat.send", map[string]any{"sessionKey": key, "message": msg, "idempotencyKey": idem}, &res); err != nil {
			t.Fatal(err)
		}
		id, _ := res["runId"].(string)
		return id
	}
	// The worker is busy with a stalled run; messages wait behind it.
	send("agent:main:worker", "/queue followup", "q")
	send("agent:main:worker", "hold\n/stall", "stall")
	root := send("agent:main:main", scripted.ToolDirective("sessions_send",
		map[string]any{"sessionKey": "agent:main:worker", "message": "after the restart", "timeoutSeconds": 0})+"\n"+scripted.ThenDirective("sent"), "root")
	var sendSpan string
	deadline := time.Now().Add(20 * time.Second)
	for sendSpan == "" {
		for _, sp := range exp.GetSpans() {
			if sp.Name == "execute_tool sessions_send" && sp.SpanContext.TraceID() == telemetry.TraceID(root) {
				sendSpan = sp.SpanContext.SpanID().String()
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sessions_send span; spans: %d", len(exp.GetSpans()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	_, exp2, _ := startTraced(t, dir)
	deadline = time.Now().Add(20 * time.Second)
	for {
		for _, sp := range exp2.GetSpans() {
			if !strings.HasPrefix(sp.Name, "invoke_agent") {
				continue
			}
			for _, a := range sp.Attributes {
				if string(a.Key) == telemetry.AttrSessionKey && a.Value.AsString() == "agent:main:worker" {
					if sp.SpanContext.TraceID() != telemetry.TraceID(root) || sp.Parent.SpanID().String() != sendSpan {
						t.Fatalf("resumed run: trace %s parent %s; want trace %s parent %s",
							sp.SpanContext.TraceID(), sp.Parent.SpanID(), telemetry.TraceID(root), sendSpan)
					}
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queued run did not run after the restart; spans: %d", len(exp2.GetSpans()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTracesExportedOverOTLP: with the standard OTEL_* environment the
// daemon builds its own provider, and the spans buffered when it shuts down
// reach the collector over OTLP/HTTP, under service.name switchboard.
func TestTracesExportedOverOTLP(t *testing.T) {
	var mu sync.Mutex
	var got []*coltrace.ExportTraceServiceRequest
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, &req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Write(b)
	}))
	defer collector.Close()
	// The exporter reads its settings from the process environment.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "600000") // nothing leaves before shutdown

	dir := t.TempDir()
	port := 0
	d, err := Start(context.Background(), Options{
		Env: config.MapEnv(map[string]string{"SWITCHBOARD_STATE_DIR": dir, "HOME": dir,
			"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL}),
		Port:   &port,
		Stdout: io.Discard,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := d.Runner.Submit(ctx, agent.Input{RunID: "otlp-1", SessionKey: "agent:main:main", AgentID: "main", Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	if run, done, err := d.Runner.Wait(ctx, "otlp-1", 20*time.Second); err != nil || !done || run.Status != store.RunOK {
		t.Fatalf("run = %+v, %v, %v", run, done, err)
	}
	mu.Lock()
	early := len(got)
	mu.Unlock()
	if early != 0 {
		t.Errorf("%d exports before shutdown", early)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	names := map[string]bool{}
	service := ""
	for _, req := range got {
		for _, rs := range req.ResourceSpans {
			for _, a := range rs.Resource.Attributes {
				if a.Key == "service.name" {
					service = a.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					if [16]byte(sp.TraceId) != telemetry.TraceID("otlp-1") {
						t.Errorf("span %s in trace %x", sp.Name, sp.TraceId)
					}
					names[sp.Name] = true
				}
			}
		}
	}
	if service != telemetry.DefaultServiceName || !names["invoke_agent main"] || !names["chat echo-1"] {
		t.Errorf("exported: service %q, spans %v", service, names)
	}
}
