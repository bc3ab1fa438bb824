package httpapi_test

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/fakellm"
)

func pngBase64(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// TestImageInputs checks that inline images of the active user turn reach
// the model as image parts (chat completions and responses), and that the
// reference's limits and the configured types are enforced before any run.
func TestImageInputs(t *testing.T) {
	g := startGateway(t, `http: { endpoints: { chatCompletions: { enabled: true, images: { maxBytes: 2000, allowedMimes: ["image/png"] } }, responses: { enabled: true } } },`, fakellm.Options{})
	img := pngBase64(t)
	dataURL := "data:image/png;base64," + img
	part := `{"type":"image_url","image_url":{"url":"` + dataURL + `"}}`

	status, _, b := g.do("POST", "/v1/chat/completions", `{"model":"openclaw","messages":[
		{"role":"user","content":[{"type":"text","text":"old turn"},`+part+`]},
		{"role":"assistant","content":"ok"},
		{"role":"user","content":[{"type":"text","text":"describe it"},`+part+`,{"type":"image_url","image_url":"`+dataURL+`"}]}]}`)
	if status != 200 {
		t.Fatalf("status %d: %s", status, b)
	}
	body := string(g.llm.Requests()[len(g.llm.Requests())-1].Body)
	if n := strings.Count(body, dataURL); n != 2 {
		t.Errorf("model got %d copies of the image, want the 2 of the active turn: %.400s", n, body)
	}

	status, _, b = g.do("POST", "/v1/responses", `{"model":"openclaw","input":[{"type":"message","role":"user","content":[
		{"type":"input_text","text":"and this?"},{"type":"input_image","source":{"type":"base64","media_type":"image/png","data":"`+img+`"}}]}]}`)
	if status != 200 {
		t.Fatalf("responses status %d: %s", status, b)
	}
	body = string(g.llm.Requests()[len(g.llm.Requests())-1].Body)
	if !strings.Contains(body, dataURL) {
		t.Errorf("responses: model request lacks the image: %.400s", body)
	}

	n := g.llm.Count()
	gif := "data:image/gif;base64," + base64.StdEncoding.EncodeToString([]byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"))
	big := "data:image/png;base64," + base64.StdEncoding.EncodeToString(append(must(base64.StdEncoding.DecodeString(img)), make([]byte, 3000)...))
	for _, tt := range []struct{ name, parts string }{
		{"remote URL", `{"type":"image_url","image_url":{"url":"http://127.0.0.1:1/x.png"}}`},
		{"missing url", `{"type":"image_url","image_url":{}}`},
		{"type not allowed", `{"type":"image_url","image_url":{"url":"` + gif + `"}}`},
		{"over maxBytes", `{"type":"image_url","image_url":{"url":"` + big + `"}}`},
		{"not an image", `{"type":"image_url","image_url":{"url":"data:image/png;base64,` + base64.StdEncoding.EncodeToString([]byte("hello")) + `"}}`},
		{"nine parts", strings.TrimSuffix(strings.Repeat(part+",", 9), ",")},
	} {
		status, _, b := g.do("POST", "/v1/chat/completions", `{"model":"openclaw","messages":[{"role":"user","content":[{"type":"text","text":"x"},`+tt.parts+`]}]}`)
		if typ, msg := errorOf(t, b); status != 400 || typ != "invalid_request_error" || msg != "Invalid image_url content in `messages`." {
			t.Errorf("%s: status %d: %.300s", tt.name, status, b)
		}
	}
	if g.llm.Count() != n {
		t.Errorf("refused images reached the model %d times", g.llm.Count()-n)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
