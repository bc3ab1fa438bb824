package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation names the tracer of Switchboard's spans.
const instrumentation = "github.com/switchboardhq/switchboard"

// Span attribute keys.
const (
	AttrSessionKey   = "switchboard.session.key"
	AttrAgentID      = "switchboard.agent.id"
	AttrRunID        = "switchboard.run.id"
	AttrLane         = "switchboard.run.lane"
	AttrStatus       = "switchboard.run.status"
	AttrChainID      = "switchboard.chain.id"
	AttrChainHops    = "switchboard.chain.hops"
	AttrTarget       = "switchboard.target.session.key"
	AttrProvider     = "gen_ai.provider.name"
	AttrModel        = "gen_ai.request.model"
	AttrInputTokens  = "gen_ai.usage.input_tokens"
	AttrOutputTokens = "gen_ai.usage.output_tokens"
	AttrToolName     = "gen_ai.tool.name"
	AttrToolCallID   = "gen_ai.tool.call.id"
)

// Tracer starts Switchboard's spans. A nil Tracer is tracing off: every
// method returns its context unchanged and a Span that does nothing,
// without allocating.
type Tracer struct{ tr trace.Tracer }

// New returns a Tracer over tp; nil when tp is nil (tracing off).
func New(tp trace.TracerProvider) *Tracer {
	if tp == nil {
		return nil
	}
	return &Tracer{tr: tp.Tracer(instrumentation)}
}

// Link places a span in its agent chain: the chain's id and the id of the
// span the chain's step came from (Span.ID of the tool call that sent the
// message or spawned the run; "" for a chain's first run).
type Link struct {
	ChainID string
	Parent  string
	Hops    int
}

// linked is ctx as the parent context of a span in l's chain: under the
// remote parent span when l has one, else a new root whose trace id is the
// chain's. A link without a chain leaves ctx as it is.
func linked(ctx context.Context, l Link) (context.Context, []trace.SpanStartOption) {
	if l.ChainID == "" {
		return ctx, nil
	}
	tid := TraceID(l.ChainID)
	if sid, ok := parseSpanID(l.Parent); ok {
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
		return trace.ContextWithRemoteSpanContext(ctx, sc), nil
	}
	return context.WithValue(ctx, forcedTraceKey{}, tid), []trace.SpanStartOption{trace.WithNewRoot()}
}

// Run describes an agent run's span.
type Run struct {
	Link
	SessionKey, AgentID, RunID, Lane string
}

// StartRun starts the span of one agent run, in its chain's trace.
func (t *Tracer) StartRun(ctx context.Context, r Run) (context.Context, Span) {
	if t == nil {
		return ctx, Span{}
	}
	ctx, opts := linked(ctx, r.Link)
	opts = append(opts, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attribute.String(AttrSessionKey, r.SessionKey),
		attribute.String(AttrAgentID, r.AgentID),
		attribute.String(AttrRunID, r.RunID),
		attribute.String(AttrLane, r.Lane),
		attribute.String(AttrChainID, r.ChainID),
		attribute.Int(AttrChainHops, r.Hops),
	))
	ctx, s := t.tr.Start(ctx, "invoke_agent "+r.AgentID, opts...)
	return ctx, Span{s}
}

// StartModel starts the span of one model call under the span in ctx.
func (t *Tracer) StartModel(ctx context.Context, provider, model string) (context.Context, Span) {
	if t == nil {
		return ctx, Span{}
	}
	ctx, s := t.tr.Start(ctx, "chat "+model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String(AttrProvider, provider),
		attribute.String(AttrModel, model),
	))
	return ctx, Span{s}
}

// StartTool starts the span of one tool call under the span in ctx.
func (t *Tracer) StartTool(ctx context.Context, name, callID string) (context.Context, Span) {
	if t == nil {
		return ctx, Span{}
	}
	ctx, s := t.tr.Start(ctx, "execute_tool "+name, trace.WithAttributes(
		attribute.String(AttrToolName, name),
		attribute.String(AttrToolCallID, callID),
	))
	return ctx, Span{s}
}

// Step describes an agent-to-agent step: a sessions_send reply-back or
// announce step, a spawn, a sub-agent's announce.
type Step struct {
	Link
	// Name is the span name ("sessions_send.step", "sessions_spawn",
	// "subagent.announce").
	Name string
	// From and To are the sending and receiving session keys.
	From, To string
	// RunID is the run the step submits, if any.
	RunID string
}

// StartStep starts the span of an agent-to-agent step in its chain's
// trace. Its ID is the Parent of the chain the step's run carries.
func (t *Tracer) StartStep(ctx context.Context, st Step) (context.Context, Span) {
	if t == nil {
		return ctx, Span{}
	}
	ctx, opts := linked(ctx, st.Link)
	opts = append(opts, trace.WithAttributes(
		attribute.String(AttrSessionKey, st.From),
		attribute.String(AttrTarget, st.To),
		attribute.String(AttrRunID, st.RunID),
		attribute.String(AttrChainID, st.ChainID),
		attribute.Int(AttrChainHops, st.Hops),
	))
	ctx, s := t.tr.Start(ctx, st.Name, opts...)
	return ctx, Span{s}
}

// Span is a started span; the zero Span (tracing off) does nothing.
type Span struct{ s trace.Span }

// ID is the span's id in hex, for a chain to carry as its Link.Parent; ""
// when tracing is off.
func (s Span) ID() string {
	if s.s == nil {
		return ""
	}
	return s.s.SpanContext().SpanID().String()
}

// TraceID is the span's trace id in hex; "" when tracing is off.
func (s Span) TraceID() string {
	if s.s == nil {
		return ""
	}
	return s.s.SpanContext().TraceID().String()
}

// SetString sets a string attribute.
func (s Span) SetString(key, v string) {
	if s.s != nil {
		s.s.SetAttributes(attribute.String(key, v))
	}
}

// SetInt sets an integer attribute.
func (s Span) SetInt(key string, v int64) {
	if s.s != nil {
		s.s.SetAttributes(attribute.Int64(key, v))
	}
}

// Usage records a model call's token counts.
func (s Span) Usage(input, output int64) {
	if s.s != nil {
		s.s.SetAttributes(attribute.Int64(AttrInputTokens, input), attribute.Int64(AttrOutputTokens, output))
	}
}

// Fail marks the span failed with msg (an error's text).
func (s Span) Fail(msg string) {
	if s.s != nil {
		s.s.SetStatus(codes.Error, msg)
		s.s.SetAttributes(attribute.String("error.type", "error"))
	}
}

// End ends the span, failed with err's text when err is not nil.
func (s Span) End(err error) {
	if s.s == nil {
		return
	}
	if err != nil {
		s.Fail(err.Error())
	}
	s.s.End()
}
