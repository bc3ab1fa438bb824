package telemetry

import (
	"context"
	"errors"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func mapEnv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		on      bool
		wantErr bool
	}{
		{"nothing set", nil, false, false},
		{"exporter otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, false},
		{"exporter OTLP spaced", map[string]string{"OTEL_TRACES_EXPORTER": " OTLP "}, true, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true, false},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, true, false},
		{"exporter none wins over endpoint", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}, false, false},
		{"sdk disabled wins", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, false, false},
		{"sdk disabled false", map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_TRACES_EXPORTER": "otlp"}, true, false},
		{"unknown exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			on, err := Enabled(mapEnv(tc.env))
			if on != tc.on || (err != nil) != tc.wantErr {
				t.Errorf("Enabled = %v, %v; want %v, err %v", on, err, tc.on, tc.wantErr)
			}
		})
	}
}

func TestSetup(t *testing.T) {
	ctx := context.Background()
	tp, stop, err := Setup(ctx, mapEnv(nil), "v")
	if tp != nil || stop != nil || err != nil {
		t.Fatalf("off: Setup = %v, %v, %v", tp, stop != nil, err)
	}
	if _, _, err := Setup(ctx, mapEnv(map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}), "v"); err == nil {
		t.Error("grpc protocol accepted")
	}
	if _, _, err := Setup(ctx, mapEnv(map[string]string{"OTEL_TRACES_EXPORTER": "jaeger"}), "v"); err == nil {
		t.Error("unknown exporter accepted")
	}
	env := map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SERVICE_NAME": "gw-7"}
	tp, stop, err = Setup(ctx, mapEnv(env), "v1.2")
	if err != nil || tp == nil || stop == nil {
		t.Fatalf("on: Setup = %v, %v", tp, err)
	}
	// Nothing was recorded: shutting down flushes nothing and returns.
	if err := stop(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	res, err := Resource(ctx, mapEnv(nil), "")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := res.Set().Value("service.name"); v.AsString() != DefaultServiceName {
		t.Errorf("service.name = %q", v.AsString())
	}
	res, _ = Resource(ctx, mapEnv(env), "")
	if v, _ := res.Set().Value("service.name"); v.AsString() != "gw-7" {
		t.Errorf("service.name = %q, want OTEL_SERVICE_NAME", v.AsString())
	}
}

func TestTraceIDDeterministic(t *testing.T) {
	a, b := TraceID("run-1"), TraceID("run-1")
	if a != b || !a.IsValid() {
		t.Fatalf("TraceID not stable: %v %v", a, b)
	}
	if TraceID("run-2") == a {
		t.Error("different chains share a trace id")
	}
}

func TestChainSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := NewProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	tr := New(tp)
	ctx := context.Background()

	// The chain's first run is a root span in the chain's trace.
	rctx, run := tr.StartRun(ctx, Run{Link: Link{ChainID: "c1"}, SessionKey: "agent:main:main", AgentID: "main", RunID: "c1"})
	if run.TraceID() != TraceID("c1").String() {
		t.Fatalf("root run trace = %s, want %s", run.TraceID(), TraceID("c1"))
	}
	_, tool := tr.StartTool(rctx, "sessions_send", "call-1")
	tool.End(nil)
	run.End(nil)

	// A later run (another goroutine, or after a restart) continues under
	// the tool call its chain carries.
	_, run2 := tr.StartRun(ctx, Run{Link: Link{ChainID: "c1", Parent: tool.ID(), Hops: 1}, SessionKey: "agent:main:w", RunID: "r2"})
	_, model := tr.StartModel(ctx, "p", "m")
	model.Usage(3, 4)
	model.End(errors.New("boom"))
	run2.End(nil)
	spans := exp.GetSpans()
	if len(spans) != 4 {
		t.Fatalf("%d spans", len(spans))
	}
	got := spans[3] // ended: tool, run, model, run2
	if got.SpanContext.TraceID() != TraceID("c1") || got.Parent.SpanID().String() != tool.ID() || !got.Parent.IsRemote() {
		t.Errorf("continued run: trace %v parent %v", got.SpanContext.TraceID(), got.Parent)
	}
	// A malformed carried parent starts the chain's trace again as a root.
	_, run3 := tr.StartRun(ctx, Run{Link: Link{ChainID: "c1", Parent: "zz"}})
	run3.End(nil)
	if s := exp.GetSpans()[4]; s.Parent.IsValid() || s.SpanContext.TraceID() != TraceID("c1") {
		t.Errorf("bad parent: %v %v", s.Parent, s.SpanContext.TraceID())
	}
	// Without the chain id generator nothing is forced.
	if _, ok := parseSpanID(""); ok {
		t.Error("empty span id parsed")
	}
}

func TestNilTracerIsOff(t *testing.T) {
	var tr *Tracer
	if New(nil) != nil {
		t.Fatal("New(nil) is not nil")
	}
	ctx := context.Background()
	c2, s := tr.StartRun(ctx, Run{Link: Link{ChainID: "x"}})
	if c2 != ctx || s.ID() != "" || s.TraceID() != "" {
		t.Error("off tracer changed the context or made a span")
	}
	s.SetString("k", "v")
	s.SetInt("k", 1)
	s.Usage(1, 2)
	s.Fail("x")
	s.End(errors.New("x"))
}

// BenchmarkRunSpansOff is the cost tracing adds to a run when it is off:
// a run span, a model call span with usage and a tool call span.
func BenchmarkRunSpansOff(b *testing.B) {
	var tr *Tracer
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		rctx, run := tr.StartRun(ctx, Run{Link: Link{ChainID: "c", Hops: 1}, SessionKey: "agent:main:main", AgentID: "main", RunID: "r", Lane: "main"})
		mctx, model := tr.StartModel(rctx, "openai", "gpt")
		model.Usage(10, 20)
		model.End(nil)
		_, tool := tr.StartTool(mctx, "read", "c1")
		_ = tool.ID()
		tool.End(nil)
		run.SetString(AttrStatus, "ok")
		run.End(nil)
	}
}

// BenchmarkRunSpansOn is the same with the SDK recording (for comparison).
func BenchmarkRunSpansOn(b *testing.B) {
	tp := NewProvider(sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(tracetest.NewNoopExporter())))
	defer tp.Shutdown(context.Background())
	tr := New(tp)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		rctx, run := tr.StartRun(ctx, Run{Link: Link{ChainID: "c", Hops: 1}, SessionKey: "agent:main:main", AgentID: "main", RunID: "r", Lane: "main"})
		mctx, model := tr.StartModel(rctx, "openai", "gpt")
		model.Usage(10, 20)
		model.End(nil)
		_, tool := tr.StartTool(mctx, "read", "c1")
		_ = tool.ID()
		tool.End(nil)
		run.SetString(AttrStatus, "ok")
		run.End(nil)
	}
}

// FuzzParseSpanID: a carried span id comes from stored run input; whatever
// it holds, parsing never panics and accepts only what Span.ID writes.
func FuzzParseSpanID(f *testing.F) {
	for _, s := range []string{"", "00f067aa0ba902b7", "0000000000000000", "zz", "00F067AA0BA902B7", "00f067aa0ba902b7ff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := parseSpanID(s)
		if ok && (!id.IsValid() || !strings.EqualFold(id.String(), s)) {
			t.Errorf("parseSpanID(%q) = %v", s, id)
		}
	})
}
