package daemon

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/telemetry"
)

// traceFlushTimeout bounds how long shutdown waits for the last spans to
// reach the collector.
const traceFlushTimeout = 5 * time.Second

// tracing is the daemon's OpenTelemetry tracer and, when the daemon built
// the provider itself, the func that flushes and stops it.
type tracing struct {
	tracer   *telemetry.Tracer
	shutdown func(context.Context) error
}

// newTracing uses the injected provider (owned by the caller), else the one
// the OTEL_* environment asks for (nil: tracing off).
func newTracing(ctx context.Context, injected trace.TracerProvider, env settings.Env, version string) (*tracing, error) {
	if injected != nil {
		return &tracing{tracer: telemetry.New(injected)}, nil
	}
	tp, shutdown, err := telemetry.Setup(ctx, env, version)
	if err != nil {
		return nil, fmt.Errorf("daemon: tracing: %w", err)
	}
	return &tracing{tracer: telemetry.New(tp), shutdown: shutdown}, nil
}

// close flushes the spans still buffered and stops the exporter.
func (t *tracing) close() error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), traceFlushTimeout)
	defer cancel()
	if err := t.shutdown(ctx); err != nil {
		return fmt.Errorf("daemon: flush traces: %w", err)
	}
	return nil
}
