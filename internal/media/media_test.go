package media

import (
	"bytes"
	"encoding/base64"
	"errors"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"
)

// pngBytes is a real 2×2 PNG.
func pngBytes(t testing.TB) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecodeImage(t *testing.T) {
	p := pngBytes(t)
	b64 := base64.StdEncoding.EncodeToString(p)
	gif := base64.StdEncoding.EncodeToString([]byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"))
	tests := []struct {
		name, declared, data string
		lim                  Limits
		wantMime             string
		wantErr              error  // errors.Is target, or nil
		wantText             string // substring of the error
	}{
		{name: "png", declared: "image/png", data: b64, wantMime: "image/png"},
		{name: "declared type is only a hint", declared: "image/jpeg", data: b64, wantMime: "image/png"},
		{name: "data url", data: "data:image/png;base64," + b64, wantMime: "image/png"},
		{name: "whitespace and no padding", data: strings.TrimRight(b64[:8]+"\n"+b64[8:], "="), wantMime: "image/png"},
		{name: "gif", data: gif, wantMime: "image/gif"},
		{name: "gif not allowed", data: gif, lim: Limits{AllowedMimes: []string{"image/png"}}, wantErr: ErrNotImage},
		{name: "text is not an image", declared: "image/png", data: base64.StdEncoding.EncodeToString([]byte("hello, not an image")), wantErr: ErrNotImage, wantText: "declared image/png"},
		{name: "svg refused", data: base64.StdEncoding.EncodeToString([]byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>x</script></svg>`)), wantErr: ErrNotImage},
		{name: "too large", data: b64, lim: Limits{MaxBytes: 10}, wantErr: ErrTooLarge},
		{name: "too large before decoding", data: strings.Repeat("A", 4000), lim: Limits{MaxBytes: 100}, wantErr: ErrTooLarge},
		{name: "bad base64", data: "!!!notbase64", wantText: "invalid base64"},
		{name: "empty", data: "", wantErr: ErrNotImage},
		{name: "data url not base64", data: "data:image/png," + b64, wantText: "must be base64"},
		{name: "data url without payload", data: "data:image/png;base64,", wantText: "missing payload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img, err := DecodeImage(tt.declared, tt.data, tt.lim)
			if tt.wantErr == nil && tt.wantText == "" {
				if err != nil {
					t.Fatal(err)
				}
				if img.MimeType != tt.wantMime {
					t.Errorf("mime %q, want %q", img.MimeType, tt.wantMime)
				}
				if raw, err := base64.StdEncoding.DecodeString(img.Data); err != nil || len(raw) == 0 {
					t.Errorf("data is not canonical base64: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted: %+v", img.MimeType)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err %v, want %v", err, tt.wantErr)
			}
			if tt.wantText != "" && !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("err %q lacks %q", err, tt.wantText)
			}
		})
	}
}

func TestParseDataURL(t *testing.T) {
	mime, data, err := ParseDataURL("DATA:Image/PNG;charset=x;base64,QUJD")
	if err != nil || mime != "image/png" || data != "QUJD" {
		t.Errorf("got %q %q %v", mime, data, err)
	}
	for _, bad := range []string{"http://x/y.png", "data:image/png;base64", "data:image/png,QUJD"} {
		if _, _, err := ParseDataURL(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzDecodeImage(f *testing.F) {
	f.Add("image/png", base64.StdEncoding.EncodeToString(pngBytes(f)))
	f.Add("", "data:image/gif;base64,R0lGODlhAQABAAAAADs=")
	f.Add("x", "====")
	f.Fuzz(func(t *testing.T, declared, data string) {
		img, err := DecodeImage(declared, data, Limits{MaxBytes: 1 << 16})
		if err != nil {
			return
		}
		raw, derr := base64.StdEncoding.DecodeString(img.Data)
		if derr != nil || len(raw) == 0 || len(raw) > 1<<16 || !strings.HasPrefix(img.MimeType, "image/") {
			t.Fatalf("accepted bad image: mime %q, %d bytes, %v", img.MimeType, len(raw), derr)
		}
	})
}
