package telemetry

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"

	"go.opentelemetry.io/otel/trace"
)

// TraceID is the trace id of an agent chain: the first 16 bytes of the
// SHA-256 of its id. Every run of the chain, in any session, before or
// after a restart, derives the same one.
func TraceID(chainID string) trace.TraceID {
	sum := sha256.Sum256([]byte("switchboard-chain:" + chainID))
	var t trace.TraceID
	copy(t[:], sum[:16])
	if !t.IsValid() {
		t[15] = 1
	}
	return t
}

// forcedTraceKey carries the trace id a new root span must take.
type forcedTraceKey struct{}

// chainIDs is the SDK id generator: random span ids, and random trace ids
// except for a root span started under a context that names its chain's
// trace id.
type chainIDs struct{}

func (chainIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if t, ok := ctx.Value(forcedTraceKey{}).(trace.TraceID); ok {
		return t, newSpanID()
	}
	var t trace.TraceID
	for !t.IsValid() {
		binary.BigEndian.PutUint64(t[:8], rand.Uint64())
		binary.BigEndian.PutUint64(t[8:], rand.Uint64())
	}
	return t, newSpanID()
}

func (chainIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return newSpanID() }

func newSpanID() trace.SpanID {
	var s trace.SpanID
	for !s.IsValid() {
		binary.BigEndian.PutUint64(s[:], rand.Uint64())
	}
	return s
}

// parseSpanID reads a span id written by Span.ID; ok is false for "" or
// anything malformed.
func parseSpanID(s string) (trace.SpanID, bool) {
	var id trace.SpanID
	if len(s) != 2*len(id) {
		return id, false
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return id, false
	}
	return id, id.IsValid()
}
