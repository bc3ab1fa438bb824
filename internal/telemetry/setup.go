// Package telemetry owns Switchboard's OpenTelemetry traces: it decides
// from the standard OTEL_* environment whether traces are exported, builds
// the SDK tracer provider with its own OTLP/HTTP protobuf exporter (the
// upstream one links in gRPC), and gives the runner,
// the relay and the sub-agent manager a small span API in which every run of
// one agent chain lands in one trace (the trace id is derived from the chain
// id). When tracing is off the Tracer is nil and every call is a no-op.
package telemetry

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// DefaultServiceName is the service.name of Switchboard's spans unless
// OTEL_SERVICE_NAME says otherwise.
const DefaultServiceName = "switchboard"

// Enabled reports whether the environment asks for exported traces:
// OTEL_TRACES_EXPORTER=otlp, or an OTLP endpoint set
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) with
// no exporter named. OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none
// turn traces off whatever else is set. Any other exporter name is an error:
// only OTLP is built in.
func Enabled(env func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(env("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	switch exp := strings.ToLower(strings.TrimSpace(env("OTEL_TRACES_EXPORTER"))); exp {
	case "none":
		return false, nil
	case "otlp":
		return true, nil
	case "":
		return env("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
	default:
		return false, fmt.Errorf("telemetry: OTEL_TRACES_EXPORTER=%q is not supported (use otlp or none)", exp)
	}
}

// Setup returns the tracer provider the environment asks for and the func
// that flushes and stops it; nil, nil when traces are off. The exporter
// reads the OTEL_EXPORTER_OTLP_* settings (endpoint, headers, timeout,
// compression, TLS) from env.
func Setup(ctx context.Context, env func(string) string, version string) (trace.TracerProvider, func(context.Context) error, error) {
	on, err := Enabled(env)
	if err != nil || !on {
		return nil, nil, err
	}
	if p := strings.TrimSpace(env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")); p != "" && p != "http/protobuf" {
		return nil, nil, fmt.Errorf("telemetry: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=%q is not supported (use http/protobuf)", p)
	}
	if p := strings.TrimSpace(env("OTEL_EXPORTER_OTLP_PROTOCOL")); p != "" && p != "http/protobuf" && env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") == "" {
		return nil, nil, fmt.Errorf("telemetry: OTEL_EXPORTER_OTLP_PROTOCOL=%q is not supported (use http/protobuf)", p)
	}
	exp, err := newOTLPExporter(env)
	if err != nil {
		return nil, nil, err
	}
	res, err := Resource(ctx, env, version)
	if err != nil {
		_ = exp.Shutdown(ctx)
		return nil, nil, err
	}
	tp := NewProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

// Resource describes this process: service.name (OTEL_SERVICE_NAME or
// "switchboard"), service.version, the SDK, and OTEL_RESOURCE_ATTRIBUTES.
func Resource(ctx context.Context, env func(string) string, version string) (*resource.Resource, error) {
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
		resource.WithAttributes(
			attribute.String("service.name", cmp.Or(strings.TrimSpace(env("OTEL_SERVICE_NAME")), DefaultServiceName)),
			attribute.String("service.version", cmp.Or(version, "dev")),
		),
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return res, nil
}

// NewProvider is sdktrace.NewTracerProvider with the id generator that
// gives a chain's first run the chain's trace id. Build injected providers
// (tests) with it, or a chain's first run lands in a trace of its own.
func NewProvider(opts ...sdktrace.TracerProviderOption) *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithIDGenerator(chainIDs{})}, opts...)...)
}
