package telemetry

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkinst "go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// testSpans are two spans of one resource and scope and one of another
// scope, with every kind of field set on the first.
func testSpans(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	tid := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	ts, err := trace.ParseTraceState("k=v")
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{1, 1, 1, 1, 1, 1, 1, 1}, TraceFlags: trace.FlagsSampled, TraceState: ts})
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{2, 2, 2, 2, 2, 2, 2, 2}, Remote: true})
	linked := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{9}})
	res := resource.NewSchemaless(attribute.String("service.name", "sb"))
	start := time.Unix(1_700_000_000, 5)
	scope := sdkinst.Scope{Name: "switchboard", Version: "v1", Attributes: attribute.NewSet(attribute.Bool("s", true))}
	stubs := tracetest.SpanStubs{
		{
			Name: "agent.run", SpanContext: sc, Parent: parent, SpanKind: trace.SpanKindServer,
			StartTime: start, EndTime: start.Add(time.Millisecond),
			Attributes: []attribute.KeyValue{
				attribute.String("str", "x"), attribute.Int64("int", -7), attribute.Float64("f", 1.5), attribute.Bool("no", false),
				attribute.StringSlice("ss", []string{"a", "b"}), attribute.Int64Slice("is", []int64{1, 2}),
				attribute.BoolSlice("bs", []bool{false, true}), attribute.Float64Slice("fs", []float64{0.25}),
			},
			DroppedAttributes: 3,
			Events:            []sdktrace.Event{{Name: "ev", Time: start, Attributes: []attribute.KeyValue{attribute.Int("n", 1)}, DroppedAttributeCount: 1}},
			DroppedEvents:     2,
			Links:             []sdktrace.Link{{SpanContext: linked, Attributes: []attribute.KeyValue{attribute.String("why", "chain")}}},
			Status:            sdktrace.Status{Code: codes.Error, Description: "boom"},
			Resource:          res, InstrumentationScope: scope,
		},
		{Name: "second", SpanContext: sc, StartTime: start, EndTime: start, Resource: res, InstrumentationScope: scope, Status: sdktrace.Status{Code: codes.Ok}},
		{Name: "other-scope", SpanContext: sc, StartTime: start, EndTime: start, Resource: res, InstrumentationScope: sdkinst.Scope{Name: "other"}},
	}
	return stubs.Snapshots()
}

func TestEncodeTraceRequest(t *testing.T) {
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(encodeTraceRequest(testSpans(t)), &req); err != nil {
		t.Fatalf("not a valid ExportTraceServiceRequest: %v", err)
	}
	if len(req.ResourceSpans) != 1 {
		t.Fatalf("resource spans = %d, want 1", len(req.ResourceSpans))
	}
	rs := req.ResourceSpans[0]
	if a := rs.Resource.GetAttributes(); len(a) != 1 || a[0].Key != "service.name" || a[0].Value.GetStringValue() != "sb" {
		t.Errorf("resource attributes = %v", a)
	}
	if len(rs.ScopeSpans) != 2 || len(rs.ScopeSpans[0].Spans) != 2 || len(rs.ScopeSpans[1].Spans) != 1 {
		t.Fatalf("scope spans not grouped by scope: %v", rs.ScopeSpans)
	}
	scope := rs.ScopeSpans[0].Scope
	if scope.Name != "switchboard" || scope.Version != "v1" || len(scope.Attributes) != 1 || !scope.Attributes[0].Value.GetBoolValue() {
		t.Errorf("scope = %v", scope)
	}
	if rs.ScopeSpans[1].Scope.Name != "other" || rs.ScopeSpans[1].Spans[0].Name != "other-scope" {
		t.Errorf("second scope = %v", rs.ScopeSpans[1])
	}
	sp := rs.ScopeSpans[0].Spans[0]
	start := uint64(time.Unix(1_700_000_000, 5).UnixNano())
	if sp.Name != "agent.run" || sp.Kind != tracepb.Span_SPAN_KIND_SERVER || sp.TraceState != "k=v" ||
		[16]byte(sp.TraceId) != [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16} ||
		[8]byte(sp.SpanId) != [8]byte{1, 1, 1, 1, 1, 1, 1, 1} || [8]byte(sp.ParentSpanId) != [8]byte{2, 2, 2, 2, 2, 2, 2, 2} ||
		sp.StartTimeUnixNano != start || sp.EndTimeUnixNano != start+uint64(time.Millisecond) ||
		sp.DroppedAttributesCount != 3 || sp.DroppedEventsCount != 2 || sp.Flags != 0x301 {
		t.Errorf("span = %v", sp)
	}
	attrs := map[string]*commonpb.AnyValue{}
	for _, kv := range sp.Attributes {
		attrs[kv.Key] = kv.Value
	}
	if attrs["str"].GetStringValue() != "x" || attrs["int"].GetIntValue() != -7 || attrs["f"].GetDoubleValue() != 1.5 {
		t.Errorf("scalar attributes = %v", attrs)
	}
	if _, ok := attrs["no"].GetValue().(*commonpb.AnyValue_BoolValue); !ok || attrs["no"].GetBoolValue() {
		t.Errorf("false bool attribute = %v, want a bool value false", attrs["no"])
	}
	if ss := attrs["ss"].GetArrayValue().GetValues(); len(ss) != 2 || ss[1].GetStringValue() != "b" {
		t.Errorf("string slice = %v", ss)
	}
	if is := attrs["is"].GetArrayValue().GetValues(); len(is) != 2 || is[1].GetIntValue() != 2 {
		t.Errorf("int slice = %v", is)
	}
	if bs := attrs["bs"].GetArrayValue().GetValues(); len(bs) != 2 || bs[0].GetBoolValue() || !bs[1].GetBoolValue() {
		t.Errorf("bool slice = %v", bs)
	}
	if fs := attrs["fs"].GetArrayValue().GetValues(); len(fs) != 1 || fs[0].GetDoubleValue() != 0.25 {
		t.Errorf("float slice = %v", fs)
	}
	if len(sp.Events) != 1 || sp.Events[0].Name != "ev" || sp.Events[0].TimeUnixNano != start || sp.Events[0].DroppedAttributesCount != 1 ||
		sp.Events[0].Attributes[0].Value.GetIntValue() != 1 {
		t.Errorf("events = %v", sp.Events)
	}
	if len(sp.Links) != 1 || sp.Links[0].TraceId[0] != 9 || sp.Links[0].Attributes[0].Value.GetStringValue() != "chain" || sp.Links[0].Flags != 0x100 {
		t.Errorf("links = %v", sp.Links)
	}
	if sp.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || sp.Status.GetMessage() != "boom" {
		t.Errorf("status = %v", sp.Status)
	}
	second := rs.ScopeSpans[0].Spans[1]
	if second.Status.GetCode() != tracepb.Status_STATUS_CODE_OK || second.ParentSpanId != nil || second.Flags != 0x101 {
		t.Errorf("second span = %v", second)
	}
}

// collector is a fake OTLP/HTTP endpoint that answers with the queued
// statuses (then 200) and keeps what it received.
type collector struct {
	mu       sync.Mutex
	statuses []int
	reqs     []*http.Request
	bodies   []*coltrace.ExportTraceServiceRequest
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rd = zr
	}
	body, err := io.ReadAll(rd)
	var req coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = append(c.reqs, r)
	c.bodies = append(c.bodies, &req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(c.statuses) > 0 {
		st := c.statuses[0]
		c.statuses = c.statuses[1:]
		w.WriteHeader(st)
	}
}

func TestOTLPExporterPosts(t *testing.T) {
	c := &collector{statuses: []int{http.StatusServiceUnavailable}}
	srv := httptest.NewServer(c)
	defer srv.Close()
	exp, err := newOTLPExporter(mapEnv(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":           srv.URL + "/",
		"OTEL_EXPORTER_OTLP_HEADERS":            "authorization=Bearer%20t1, x-tenant = a",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS":     "x-only=traces",
		"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(context.Background(), testSpans(t)); err != nil {
		t.Fatalf("export after one 503: %v", err)
	}
	c.mu.Lock()
	if len(c.reqs) != 2 {
		t.Fatalf("requests = %d, want 2 (a 503 is retried)", len(c.reqs))
	}
	r := c.reqs[1]
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || r.Header.Get("Content-Encoding") != "gzip" ||
		r.Header.Get("X-Only") != "traces" || r.Header.Get("Authorization") != "" {
		t.Errorf("request %s headers %v: want /v1/traces, protobuf, gzip, the traces headers only", r.URL.Path, r.Header)
	}
	if n := len(c.bodies[1].ResourceSpans); n != 1 {
		t.Errorf("body has %d resource spans", n)
	}
	c.statuses = []int{http.StatusBadRequest}
	c.mu.Unlock()
	if err := exp.ExportSpans(context.Background(), testSpans(t)); err == nil {
		t.Error("a 400 was not reported")
	}
	c.mu.Lock()
	if len(c.reqs) != 3 {
		t.Errorf("requests = %d, want 3 (a 400 is not retried)", len(c.reqs))
	}
	c.mu.Unlock()
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(context.Background(), testSpans(t)); err != nil {
		t.Errorf("export after shutdown: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.reqs) != 3 {
		t.Errorf("requests after shutdown = %d, want 3", len(c.reqs))
	}
}

func TestOTLPExporterSettings(t *testing.T) {
	exp, err := newOTLPExporter(mapEnv(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://a:4318",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://b/custom",
		"OTEL_EXPORTER_OTLP_HEADERS":         "k=v",
		"OTEL_EXPORTER_OTLP_TIMEOUT":         "250",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if exp.url != "https://b/custom" || exp.headers["k"] != "v" || exp.timeout != 250*time.Millisecond || exp.gzip {
		t.Errorf("exporter = %+v: the traces endpoint is used as is, the rest from the general settings", exp)
	}
	if exp, _ := newOTLPExporter(mapEnv(nil)); exp.url != defaultTracesURL || exp.timeout != defaultExportTimeout {
		t.Errorf("defaults = %+v", exp)
	}
	for name, env := range map[string]map[string]string{
		"endpoint not http":   {"OTEL_EXPORTER_OTLP_ENDPOINT": "grpc://c:4317"},
		"timeout not ms":      {"OTEL_EXPORTER_OTLP_TIMEOUT": "10s"},
		"compression unknown": {"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"},
		"header without =":    {"OTEL_EXPORTER_OTLP_HEADERS": "just-a-key"},
		"header bad escape":   {"OTEL_EXPORTER_OTLP_HEADERS": "k=%zz"},
		"missing CA file":     {"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"},
		"key without cert":    {"OTEL_EXPORTER_OTLP_CLIENT_KEY": "/nonexistent/key.pem"},
	} {
		if _, err := newOTLPExporter(mapEnv(env)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
