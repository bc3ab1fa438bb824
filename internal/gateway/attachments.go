package gateway

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/media"
	"github.com/switchboardhq/switchboard/internal/provider"
)

// Attachment limits of chat.send and agent, advertised in hello-ok's
// policy.attachments as the reference does.
const (
	maxAttachments         = 8
	attachmentMaxBytes     = 20 << 20
	attachmentMaxImageByte = media.DefaultMaxImageBytes
)

// chatAttachment is one attachments entry of chat.send or agent.
type chatAttachment struct {
	Type     string          `json:"type"`
	MimeType string          `json:"mimeType"`
	FileName string          `json:"fileName"`
	Content  json.RawMessage `json:"content"`
}

// attachmentImages decodes the attachments of a chat.send or agent
// request. Images (checked by their bytes, at most attachmentMaxImageByte
// each) go to the model with the message; any other kind is refused with
// the reference's text, since the gateway has no file store for them.
func attachmentImages(raw []json.RawMessage) ([]provider.Image, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if len(raw) > maxAttachments {
		return nil, invalid(fmt.Sprintf("too many attachments (%d; limit %d)", len(raw), maxAttachments))
	}
	out := make([]provider.Image, 0, len(raw))
	for i, r := range raw {
		var a chatAttachment
		if err := json.Unmarshal(r, &a); err != nil {
			return nil, invalid(fmt.Sprintf("attachment %d: must be an object with mimeType and content", i+1))
		}
		label := a.FileName
		if label == "" {
			label = a.Type
		}
		if label == "" {
			label = fmt.Sprintf("attachment-%d", i+1)
		}
		var content string
		if json.Unmarshal(a.Content, &content) != nil {
			return nil, invalid("attachment " + label + ": content must be base64 string")
		}
		mime := strings.ToLower(strings.TrimSpace(a.MimeType))
		if mime != "" && !strings.HasPrefix(mime, "image/") {
			return nil, invalid("attachment " + label + ": only image/* supported")
		}
		img, err := media.DecodeImage(mime, content, media.Limits{MaxBytes: attachmentMaxImageByte})
		if err != nil {
			return nil, invalid("attachment " + label + ": " + err.Error())
		}
		out = append(out, img)
	}
	return out, nil
}

// attachmentPolicy is hello-ok's policy.attachments.
func attachmentPolicy() *wire.AttachmentPolicy {
	return &wire.AttachmentPolicy{MaxBytes: attachmentMaxBytes, MaxImageBytes: attachmentMaxImageByte}
}
