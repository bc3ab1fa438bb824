package secrets

import (
	"bytes"
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
