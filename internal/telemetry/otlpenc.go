package telemetry

import (
	"encoding/binary"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// This file encodes spans as an OTLP ExportTraceServiceRequest in the
// protobuf wire format by hand (field numbers from
// opentelemetry/proto/collector/trace/v1 and trace/v1). The upstream OTLP
// exporter builds the same message from generated protobuf types, and with
// them links in gRPC and the gRPC gateway: several MB of binary and about
// 2 ms of package initialisation at every start, for a message of a dozen
// fields.

// Protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// pb appends protobuf fields to a byte slice.
type pb []byte

func (b pb) tag(field, wt int) pb {
	return binary.AppendUvarint(b, uint64(field)<<3|uint64(wt))
}

func (b pb) varint(field int, v uint64) pb {
	if v == 0 {
		return b
	}
	return binary.AppendUvarint(b.tag(field, wireVarint), v)
}

func (b pb) fixed64(field int, v uint64) pb {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint64(b.tag(field, wireFixed64), v)
}

func (b pb) fixed32(field int, v uint32) pb {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint32(b.tag(field, wireFixed32), v)
}

func (b pb) bytes(field int, v []byte) pb {
	if len(v) == 0 {
		return b
	}
	return append(binary.AppendUvarint(b.tag(field, wireBytes), uint64(len(v))), v...)
}

func (b pb) str(field int, v string) pb {
	if v == "" {
		return b
	}
	return append(binary.AppendUvarint(b.tag(field, wireBytes), uint64(len(v))), v...)
}

// msg appends field as an embedded message written by body, even when the
// message is empty (an empty AnyValue or Status still says it is there).
func (b pb) msg(field int, body func(pb) pb) pb {
	inner := body(nil)
	return append(binary.AppendUvarint(b.tag(field, wireBytes), uint64(len(inner))), inner...)
}

// encodeTraceRequest encodes spans as an ExportTraceServiceRequest: one
// ResourceSpans per resource, one ScopeSpans per instrumentation scope,
// in the order they first appear.
func encodeTraceRequest(spans []sdktrace.ReadOnlySpan) []byte {
	type scopeKey struct {
		name, version, schema string
		attrs                 attribute.Distinct
	}
	type scopeGroup struct {
		span  sdktrace.ReadOnlySpan
		spans []sdktrace.ReadOnlySpan
	}
	type resGroup struct {
		span   sdktrace.ReadOnlySpan
		scopes []*scopeGroup
		byKey  map[scopeKey]*scopeGroup
	}
	var groups []*resGroup
	byRes := map[attribute.Distinct]*resGroup{}
	for _, s := range spans {
		rk := s.Resource().Equivalent()
		rg := byRes[rk]
		if rg == nil {
			rg = &resGroup{span: s, byKey: map[scopeKey]*scopeGroup{}}
			byRes[rk] = rg
			groups = append(groups, rg)
		}
		sc := s.InstrumentationScope()
		sk := scopeKey{sc.Name, sc.Version, sc.SchemaURL, sc.Attributes.Equivalent()}
		sg := rg.byKey[sk]
		if sg == nil {
			sg = &scopeGroup{span: s}
			rg.byKey[sk] = sg
			rg.scopes = append(rg.scopes, sg)
		}
		sg.spans = append(sg.spans, s)
	}
	var out pb
	for _, rg := range groups {
		out = out.msg(1, func(b pb) pb { // ResourceSpans
			res := rg.span.Resource()
			b = b.msg(1, func(b pb) pb { return keyValues(b, 1, res.Attributes()) })
			for _, sg := range rg.scopes {
				b = b.msg(2, func(b pb) pb { // ScopeSpans
					sc := sg.span.InstrumentationScope()
					b = b.msg(1, func(b pb) pb {
						b = b.str(1, sc.Name).str(2, sc.Version)
						return keyValues(b, 3, sc.Attributes.ToSlice())
					})
					for _, s := range sg.spans {
						b = b.msg(2, func(b pb) pb { return span(b, s) })
					}
					return b.str(3, sc.SchemaURL)
				})
			}
			return b.str(3, res.SchemaURL())
		})
	}
	return out
}

// span writes the fields of one Span message.
func span(b pb, s sdktrace.ReadOnlySpan) pb {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = b.bytes(1, tid[:]).bytes(2, sid[:]).str(3, sc.TraceState().String())
	if p := s.Parent(); p.SpanID().IsValid() {
		psid := p.SpanID()
		b = b.bytes(4, psid[:])
	}
	b = b.str(5, s.Name()).varint(6, uint64(spanKind(s.SpanKind())))
	b = b.fixed64(7, unixNano(s.StartTime().UnixNano())).fixed64(8, unixNano(s.EndTime().UnixNano()))
	b = keyValues(b, 9, s.Attributes()).varint(10, uint64(s.DroppedAttributes()))
	for _, e := range s.Events() {
		b = b.msg(11, func(b pb) pb {
			b = b.fixed64(1, unixNano(e.Time.UnixNano())).str(2, e.Name)
			return keyValues(b, 3, e.Attributes).varint(4, uint64(e.DroppedAttributeCount))
		})
	}
	b = b.varint(12, uint64(s.DroppedEvents()))
	for _, l := range s.Links() {
		b = b.msg(13, func(b pb) pb {
			ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			b = b.bytes(1, ltid[:]).bytes(2, lsid[:]).str(3, l.SpanContext.TraceState().String())
			b = keyValues(b, 4, l.Attributes).varint(5, uint64(l.DroppedAttributeCount))
			return b.fixed32(6, spanFlags(l.SpanContext))
		})
	}
	b = b.varint(14, uint64(s.DroppedLinks()))
	st := s.Status()
	b = b.msg(15, func(b pb) pb { return b.str(2, st.Description).varint(3, statusCode(st.Code)) })
	flags := uint32(sc.TraceFlags()) | 0x100 // SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK
	if s.Parent().IsRemote() {
		flags |= 0x200 // SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK
	}
	return b.fixed32(16, flags)
}

// spanFlags are a link's W3C trace flags with its is-remote bits.
func spanFlags(sc trace.SpanContext) uint32 {
	f := uint32(sc.TraceFlags()) | 0x100
	if sc.IsRemote() {
		f |= 0x200
	}
	return f
}

func unixNano(n int64) uint64 {
	if n < 0 {
		return 0
	}
	return uint64(n)
}

// spanKind maps the API's kinds to OTLP's (the same numbers, 0 unspecified).
func spanKind(k trace.SpanKind) int {
	if k < trace.SpanKindInternal || k > trace.SpanKindConsumer {
		return int(trace.SpanKindInternal)
	}
	return int(k)
}

// statusCode maps codes.Code (Unset, Error, Ok) to OTLP's StatusCode
// (UNSET 0, OK 1, ERROR 2).
func statusCode(c codes.Code) uint64 {
	switch c {
	case codes.Ok:
		return 1
	case codes.Error:
		return 2
	default:
		return 0
	}
}

// keyValues writes each attribute as a KeyValue in field.
func keyValues(b pb, field int, kvs []attribute.KeyValue) pb {
	for _, kv := range kvs {
		b = b.msg(field, func(b pb) pb {
			return b.str(1, string(kv.Key)).msg(2, func(b pb) pb { return anyValue(b, kv.Value) })
		})
	}
	return b
}

// anyValue writes the fields of an AnyValue. Scalars are written even when
// zero: the oneof must say which kind the value is.
func anyValue(b pb, v attribute.Value) pb {
	switch v.Type() {
	case attribute.BOOL:
		var n uint64
		if v.AsBool() {
			n = 1
		}
		return binary.AppendUvarint(b.tag(2, wireVarint), n)
	case attribute.INT64:
		return binary.AppendUvarint(b.tag(3, wireVarint), uint64(v.AsInt64()))
	case attribute.FLOAT64:
		return binary.LittleEndian.AppendUint64(b.tag(4, wireFixed64), math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		s := v.AsString()
		return append(binary.AppendUvarint(b.tag(1, wireBytes), uint64(len(s))), s...)
	case attribute.BYTESLICE:
		p := v.AsByteSlice()
		return append(binary.AppendUvarint(b.tag(7, wireBytes), uint64(len(p))), p...)
	case attribute.BOOLSLICE:
		return arrayOf(b, v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return arrayOf(b, v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return arrayOf(b, v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return arrayOf(b, v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		vs := v.AsSlice()
		return array(b, len(vs), func(i int) attribute.Value { return vs[i] })
	case attribute.MAP:
		kvs := v.AsMap()
		return b.msg(6, func(b pb) pb { return keyValues(b, 1, kvs) })
	default: // EMPTY: an AnyValue with no value set.
		return b
	}
}

// arrayOf writes an ArrayValue of xs, each made a Value by value.
func arrayOf[T any](b pb, xs []T, value func(T) attribute.Value) pb {
	return array(b, len(xs), func(i int) attribute.Value { return value(xs[i]) })
}

// array writes an ArrayValue of n values.
func array(b pb, n int, at func(int) attribute.Value) pb {
	return b.msg(5, func(b pb) pb {
		for i := range n {
			b = b.msg(1, func(b pb) pb { return anyValue(b, at(i)) })
		}
		return b
	})
}
