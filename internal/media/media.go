// Package media checks the inline images that callers send with a message
// (chat.send attachments, the HTTP API's image parts): it decodes base64
// and data: URLs, identifies the image from its bytes rather than the
// declared type, and bounds sizes, so that what reaches a model and the
// transcript is a known image format of bounded size.
package media

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// DefaultImageMimes are the image types accepted when a caller configures
// none: the formats every supported model API takes inline.
var DefaultImageMimes = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// DefaultMaxImageBytes bounds one decoded image (the reference's
// agent-hydration cap for chat attachments).
const DefaultMaxImageBytes = 6 << 20

// Limits bound what DecodeImage accepts.
type Limits struct {
	// MaxBytes bounds the decoded size; 0 means DefaultMaxImageBytes.
	MaxBytes int
	// AllowedMimes lists the accepted types; nil means DefaultImageMimes.
	AllowedMimes []string
}

// ErrNotImage marks data whose bytes are not an accepted image.
var ErrNotImage = errors.New("not a supported image")

// ErrTooLarge marks an image over Limits.MaxBytes.
var ErrTooLarge = errors.New("image too large")

// ParseDataURL splits a data: URL into its declared MIME type and its
// base64 payload. Only base64 data URLs are accepted.
func ParseDataURL(s string) (mime, data string, err error) {
	rest, ok := strings.CutPrefix(s, "data:")
	if !ok {
		if len(s) >= 5 && strings.EqualFold(s[:5], "data:") {
			rest, ok = s[5:], true
		}
	}
	if !ok {
		return "", "", errors.New("not a data: URL")
	}
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "", errors.New("data: URL has no payload")
	}
	b64 := false
	for part := range strings.SplitSeq(meta, ";") {
		part = strings.TrimSpace(part)
		switch {
		case strings.EqualFold(part, "base64"):
			b64 = true
		case strings.Contains(part, "/") && mime == "":
			mime = strings.ToLower(part)
		}
	}
	if !b64 {
		return "", "", errors.New("data: URL must be base64 encoded")
	}
	if strings.TrimSpace(payload) == "" {
		return "", "", errors.New("data: URL is missing payload data")
	}
	return mime, payload, nil
}

// DecodeImage checks one base64 image against lim and returns it with its
// canonical (padded, whitespace-free) base64 and the MIME type its bytes
// show. A data: URL prefix is accepted. The declared type is only a hint:
// bytes that are not an accepted image are refused whatever it says.
func DecodeImage(declared, b64 string, lim Limits) (provider.Image, error) {
	if strings.HasPrefix(strings.TrimSpace(b64), "data:") {
		m, payload, err := ParseDataURL(strings.TrimSpace(b64))
		if err != nil {
			return provider.Image{}, err
		}
		declared, b64 = cmp.Or(declared, m), payload
	}
	maxBytes := lim.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxImageBytes
	}
	clean := strings.Map(func(r rune) rune {
		if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
			return -1
		}
		return r
	}, b64)
	// Bound the work before decoding: base64 is 4 bytes per 3.
	if est := len(clean) / 4 * 3; est > maxBytes+3 {
		return provider.Image{}, fmt.Errorf("%w: about %d bytes, limit %d", ErrTooLarge, est, maxBytes)
	}
	raw, err := base64.StdEncoding.DecodeString(clean)
	if err != nil {
		raw, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(clean, "="))
	}
	if err != nil {
		return provider.Image{}, fmt.Errorf("invalid base64: %w", err)
	}
	if len(raw) == 0 {
		return provider.Image{}, fmt.Errorf("%w: empty", ErrNotImage)
	}
	if len(raw) > maxBytes {
		return provider.Image{}, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(raw), maxBytes)
	}
	sniffed := http.DetectContentType(raw)
	allowed := lim.AllowedMimes
	if allowed == nil {
		allowed = DefaultImageMimes
	}
	if !strings.HasPrefix(sniffed, "image/") || !slices.Contains(allowed, sniffed) {
		shown := sniffed
		if declared != "" {
			shown = fmt.Sprintf("%s (declared %s)", sniffed, declared)
		}
		return provider.Image{}, fmt.Errorf("%w: content is %s; accepted: %s", ErrNotImage, shown, strings.Join(allowed, ", "))
	}
	return provider.Image{MimeType: sniffed, Data: base64.StdEncoding.EncodeToString(raw)}, nil
}
