package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"
	"time"
)

// testPNG is a real 3×3 PNG, base64.
func testPNG(t *testing.T) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 3, 3))
	img.Set(1, 1, color.RGBA{B: 255, A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// TestChatSendImageAttachment sends an image with chat.send: the model
// gets it as an image part beside the text, the transcript keeps it as an
// image block, and attachments that are not images are refused with the
// reference's texts before anything is stored.
func TestChatSendImageAttachment(t *testing.T) {
	g := start(t, "", nil)
	c := g.dial(t)
	img := testPNG(t)

	if a := c.Hello().Policy.Attachments; a == nil || a.MaxImageBytes != 6<<20 || a.MaxBytes != 20<<20 {
		t.Errorf("hello-ok policy.attachments = %+v", a)
	}

	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "what is in this picture?", "idempotencyKey": "img-1",
		"attachments": []any{map[string]any{"type": "image", "mimeType": "image/png", "fileName": "dot.png", "content": img}}})
	if w := call(t, c, "agent.wait", map[string]any{"runId": "img-1", "timeoutMs": 30000}); w["status"] != "ok" {
		t.Fatalf("run = %v", w)
	}
	reqs := g.llm.Requests()
	body := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(body, `"type":"image_url"`) || !strings.Contains(body, "data:image/png;base64,"+img) || !strings.Contains(body, "what is in this picture?") {
		t.Errorf("model request lacks the image part: %.600s", body)
	}
	msgs := history(t, c, "main")
	var user map[string]any
	for _, m := range msgs {
		if m["role"] == "user" {
			user = m
		}
	}
	b, _ := json.Marshal(user["content"])
	if !strings.Contains(string(b), `"type":"image"`) || !strings.Contains(string(b), `"mimeType":"image/png"`) {
		t.Errorf("stored user message %s", b)
	}

	// An image alone (no text) is a message too.
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "", "idempotencyKey": "img-2",
		"attachments": []any{map[string]any{"mimeType": "image/png", "content": "data:image/png;base64," + img}}})
	if w := call(t, c, "agent.wait", map[string]any{"runId": "img-2", "timeoutMs": 30000}); w["status"] != "ok" {
		t.Fatalf("image-only run = %v", w)
	}

	before := len(history(t, c, "main"))
	bad := []struct {
		name string
		att  any
		want string
	}{
		{"not image mime", map[string]any{"mimeType": "application/pdf", "fileName": "a.pdf", "content": img}, "attachment a.pdf: only image/* supported"},
		{"content not a string", map[string]any{"mimeType": "image/png", "fileName": "x.png", "content": 5}, "attachment x.png: content must be base64 string"},
		{"bytes are not an image", map[string]any{"mimeType": "image/png", "fileName": "fake.png", "content": base64.StdEncoding.EncodeToString([]byte("<script>alert(1)</script>"))}, "attachment fake.png: not a supported image"},
		{"bad base64", map[string]any{"mimeType": "image/png", "fileName": "b.png", "content": "%%%"}, "attachment b.png: invalid base64"},
		{"too large", map[string]any{"mimeType": "image/png", "fileName": "big.png", "content": strings.Repeat("A", 9<<20)}, "attachment big.png: image too large"},
	}
	for i, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := c.Call(ctx, "chat.send", map[string]any{"sessionKey": "main", "message": "x", "idempotencyKey": "bad-" + string(rune('a'+i)),
				"attachments": []any{tt.att}}, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "INVALID_REQUEST") {
				t.Errorf("err = %v, want INVALID_REQUEST %q", err, tt.want)
			}
		})
	}
	if after := len(history(t, c, "main")); after != before {
		t.Errorf("refused sends changed the transcript: %d → %d entries", before, after)
	}
}
