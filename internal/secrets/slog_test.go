package secrets

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestMaskingHandler(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	var buf bytes.Buffer
	ref := &Ref{}
	log := slog.New(NewLogHandler(slog.NewJSONHandler(&buf, nil), ref))
	log.Info("before: " + key) // no masker yet: passed through
	if !strings.Contains(buf.String(), key) {
		t.Fatalf("log line = %s", buf.String())
	}
	buf.Reset()
	ref.Set(New(key)) // a token generated after the logger was made
	log.With("peer", "tok "+key).WithGroup("g").Error("call failed: "+key,
		"err", errors.New("401: Bearer "+key), "detail", struct{ K string }{key}, slog.Group("inner", "v", key), "n", 3)
	out := buf.String()
	if strings.Contains(out, key) || strings.Count(out, Mask) != 5 || !strings.Contains(out, `"n":3`) {
		t.Fatalf("log line = %s", out)
	}
}

// TestMaskingHandlerFastPath: a record whose message and strings hold no
// secret and whose other values are numbers passes on as it is, with no
// copy; a secret in any one string, error or other value is still masked.
func TestMaskingHandlerFastPath(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	var buf bytes.Buffer
	ref := &Ref{}
	ref.Set(New(key))
	log := slog.New(NewLogHandler(slog.NewJSONHandler(&buf, nil), ref))
	for _, attr := range []slog.Attr{
		slog.String("s", "x "+key),
		slog.Any("err", errors.New("401: "+key)),
		slog.Any("v", struct{ K string }{key}),
		slog.Group("g", "s", key),
	} {
		buf.Reset()
		log.LogAttrs(context.Background(), slog.LevelInfo, "run ended", slog.String("runId", "r1"), attr, slog.Int("n", 3))
		if out := buf.String(); strings.Contains(out, key) || !strings.Contains(out, Mask) {
			t.Errorf("%s: log line = %s", attr.Key, out)
		}
	}
	// Seven attributes, as "run ended" has: more than a record holds
	// inline, so a copy of the record would allocate. The allocations are
	// counted over a handler that uses no pool (slog's handlers do, and
	// the race detector makes pools drop at random).
	clean := func(l *slog.Logger) func() {
		return func() {
			l.LogAttrs(context.Background(), slog.LevelInfo, "run ended", slog.String("runId", "r1"),
				slog.String("sessionKey", "agent:main:main"), slog.String("status", "ok"), slog.Int64("inputTokens", 1),
				slog.Int64("outputTokens", 2), slog.Int64("totalTokens", 3), slog.Int64("durationMs", 12))
		}
	}
	var seen int
	count := countHandler{n: &seen}
	bare := testing.AllocsPerRun(100, clean(slog.New(count)))
	if n := testing.AllocsPerRun(100, clean(slog.New(NewLogHandler(count, ref)))); n != bare {
		t.Errorf("a record with no secret cost %v allocations through the masking handler, %v without it", n, bare)
	}
	if seen == 0 {
		t.Fatal("no record reached the handler")
	}
	buf.Reset()
	clean(log)()
	if out := buf.String(); !strings.Contains(out, `"status":"ok"`) || !strings.Contains(out, `"durationMs":12`) {
		t.Errorf("log line = %s", out)
	}
}

// countHandler counts the records it is given and writes nothing.
type countHandler struct{ n *int }

func (h countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h countHandler) Handle(_ context.Context, r slog.Record) error {
	*h.n += r.NumAttrs()
	return nil
}
func (h countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countHandler) WithGroup(string) slog.Handler      { return h }
