package telemetry

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// traceFlushTimeout bounds how long shutdown waits for the last spans to
// reach the collector.
const traceFlushTimeout = 5 * time.Second

// Tracing is the gateway's OpenTelemetry tracer and, when it built the
// provider itself, the func that flushes and stops it.
type Tracing struct {
	// Tracer starts the gateway's spans.
	Tracer   *Tracer
	shutdown func(context.Context) error
}

// Start uses the injected provider (owned by the caller), else the one
// the OTEL_* environment asks for (nil: tracing off).
func Start(ctx context.Context, injected trace.TracerProvider, env func(string) string, version string) (*Tracing, error) {
	if injected != nil {
		return &Tracing{Tracer: New(injected)}, nil
	}
	tp, shutdown, err := Setup(ctx, env, version)
	if err != nil {
		return nil, fmt.Errorf("telemetry: tracing: %w", err)
	}
	return &Tracing{Tracer: New(tp), shutdown: shutdown}, nil
}

// Exporting reports whether spans leave the process (the provider is the
// one Start built).
func (t *Tracing) Exporting() bool { return t != nil && t.shutdown != nil }

// Close flushes the spans still buffered and stops the exporter.
func (t *Tracing) Close() error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), traceFlushTimeout)
	defer cancel()
	if err := t.shutdown(ctx); err != nil {
		return fmt.Errorf("telemetry: flush traces: %w", err)
	}
	return nil
}
