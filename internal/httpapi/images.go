package httpapi

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/switchboardhq/switchboard/internal/media"
	"github.com/switchboardhq/switchboard/internal/provider"
)

// decodeImages checks the image sources of a request's active user turn
// against the reference's limits (8 parts, 20 MiB in all) and the
// configured per-image size and types. Only inline data: URLs are taken:
// Switchboard fetches no image URL. reason is "" when all are fine, else
// what was wrong (logged; the client gets the reference's generic text).
func (s *Server) decodeImages(srcs []string) (images []provider.Image, reason string) {
	if len(srcs) == 0 {
		return nil, ""
	}
	if len(srcs) > maxImageParts {
		return nil, fmt.Sprintf("Too many image_url parts (%d; limit %d)", len(srcs), maxImageParts)
	}
	maxBytes, mimes := s.conf.HTTP.ImageMaxBytes, s.conf.HTTP.ImageMimes
	total := 0
	for i, src := range srcs {
		switch {
		case src == "":
			return nil, "image_url part is missing a valid URL"
		case !strings.HasPrefix(strings.ToLower(src), "data:"):
			return nil, fmt.Sprintf("image %d: URL-sourced images are not fetched by this gateway; send a base64 data: URL", i+1)
		}
		img, err := media.DecodeImage("", src, media.Limits{MaxBytes: maxBytes, AllowedMimes: mimes})
		if err != nil {
			return nil, fmt.Sprintf("image %d: %v", i+1, err)
		}
		if total += base64.StdEncoding.DecodedLen(len(img.Data)); total > maxImageTotal {
			return nil, fmt.Sprintf("Total image payload too large (%d; limit %d)", total, maxImageTotal)
		}
		images = append(images, img)
	}
	return images, ""
}
