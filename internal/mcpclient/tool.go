package mcpclient

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard/internal/tools"
)

// maxToolName is the longest tool name providers accept.
const maxToolName = 64

// ToolName returns the agent tool name of an MCP server's tool:
// <server>__<tool>, with characters providers refuse replaced by '_' and
// cut to 64 bytes.
func ToolName(server, tool string) string {
	var b strings.Builder
	for _, r := range server + "__" + tool {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	n := b.String()
	if len(n) > maxToolName {
		n = n[:maxToolName]
	}
	return n
}

// mcpTool is one MCP server tool as an agent tool.
type mcpTool struct {
	s      *server
	name   string // agent name
	remote string // MCP name
	desc   string
	schema json.RawMessage
}

var _ tools.Tool = (*mcpTool)(nil)

func newTool(s *server, t *sdk.Tool) *mcpTool {
	schema, err := json.Marshal(t.InputSchema)
	if err != nil || len(schema) == 0 || string(schema) == "null" {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	return &mcpTool{s: s, name: ToolName(s.cfg.Name, t.Name), remote: t.Name, desc: desc, schema: schema}
}

func (t *mcpTool) Name() string            { return t.name }
func (t *mcpTool) Description() string     { return t.desc }
func (t *mcpTool) Schema() json.RawMessage { return t.schema }

// Call forwards the call; failures are errors naming the server and tool
// (the runtime turns them into the model's tool error).
func (t *mcpTool) Call(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
	server := t.s.cfg.Name
	cctx, cancel := context.WithTimeout(ctx, t.s.cfg.RequestTimeout)
	defer cancel()
	var res *sdk.CallToolResult
	for attempt := 0; ; attempt++ {
		sess, err := t.s.session(ctx)
		if err != nil {
			return nil, fmt.Errorf("MCP server %q is not available: %w", server, err)
		}
		res, err = sess.CallTool(cctx, &sdk.CallToolParams{Name: t.remote, Arguments: args})
		if err == nil {
			break
		}
		// ErrConnectionClosed: the call was refused before it was sent, the
		// process having just exited. Once the loss is noticed, the call
		// goes to the restarted server (it was never made).
		if errors.Is(err, sdk.ErrConnectionClosed) && attempt == 0 && t.s.awaitLost(ctx, sess) {
			continue
		}
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("MCP tool %s/%s: %w", server, t.remote, ctx.Err())
		case cctx.Err() != nil:
			return nil, fmt.Errorf("MCP server %q did not answer %s within %s", server, t.remote, t.s.cfg.RequestTimeout)
		case errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || t.s.lost(sess):
			return nil, fmt.Errorf("MCP server %q exited during the call to %s (it will be restarted): %v", server, t.remote, err)
		}
		return nil, fmt.Errorf("MCP server %q: %s: %w", server, t.remote, err)
	}
	return Project(res, server, t.remote), nil
}

// awaitLost waits (up to 2s) until the server has noticed that sess ended,
// and reports whether it did.
func (s *server) awaitLost(ctx context.Context, sess *sdk.ClientSession) bool {
	deadline := time.Now().Add(2 * time.Second)
	for !s.lost(sess) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// lost reports whether sess is no longer the server's live session.
func (s *server) lost(sess *sdk.ClientSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sess != sess
}

// Project converts an MCP tool result into the reference's agent tool
// result: content blocks (text and image; audio and resources as text
// lines; structured content first as pretty JSON, dropping a text block
// that only mirrors it) and details {mcpServer, mcpTool,
// structuredContent?, status: "error" when isError}.
func Project(res *sdk.CallToolResult, server, tool string) *tools.Result {
	var blocks []tools.Block
	var structured any
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			_ = json.Unmarshal(b, &structured)
		}
	}
	_, isObject := structured.(map[string]any)
	if isObject {
		pretty, _ := json.MarshalIndent(structured, "", "  ")
		blocks = append(blocks, tools.Block{Type: "text", Text: "structuredContent:\n" + string(pretty)})
	}
	for _, c := range res.Content {
		if isObject && mirrors(c, structured) {
			continue
		}
		blocks = append(blocks, contentBlock(c))
	}
	if len(blocks) == 0 {
		msg := "MCP tool completed without returning content."
		if res.IsError {
			msg = "MCP tool failed without returning content."
		}
		blocks = []tools.Block{{Type: "text", Text: msg}}
	}
	details := map[string]any{"mcpServer": server, "mcpTool": tool}
	if res.StructuredContent != nil {
		details["structuredContent"] = structured
	}
	if res.IsError {
		details["status"] = "error"
	}
	var text []string
	for _, b := range blocks {
		if b.Type == "image" {
			text = append(text, fmt.Sprintf("[image %s, %d base64 bytes]", b.MimeType, len(b.Data)))
			continue
		}
		text = append(text, b.Text)
	}
	return &tools.Result{Details: details, Text: strings.Join(text, "\n"), IsError: res.IsError, Blocks: blocks}
}

// mirrors reports whether c is a text block holding structured as JSON.
func mirrors(c sdk.Content, structured any) bool {
	tc, ok := c.(*sdk.TextContent)
	if !ok {
		return false
	}
	var v any
	if json.Unmarshal([]byte(tc.Text), &v) != nil {
		return false
	}
	return reflect.DeepEqual(v, structured)
}

// contentBlock converts one MCP content block to a text or image block.
func contentBlock(c sdk.Content) tools.Block {
	switch c := c.(type) {
	case *sdk.TextContent:
		return tools.Block{Type: "text", Text: c.Text}
	case *sdk.ImageContent:
		// The SDK holds the decoded bytes; the transcript keeps base64.
		return tools.Block{Type: "image", Data: base64.StdEncoding.EncodeToString(c.Data), MimeType: c.MIMEType}
	case *sdk.AudioContent:
		return tools.Block{Type: "text", Text: "[audio " + c.MIMEType + "]"}
	case *sdk.ResourceLink:
		label := c.Title
		if label == "" {
			label = c.Name
		}
		if label != "" {
			return tools.Block{Type: "text", Text: "[" + label + "] " + c.URI}
		}
		return tools.Block{Type: "text", Text: c.URI}
	case *sdk.EmbeddedResource:
		if c.Resource != nil {
			if c.Resource.Text != "" {
				return tools.Block{Type: "text", Text: c.Resource.Text}
			}
			return tools.Block{Type: "text", Text: c.Resource.URI}
		}
	}
	b, err := json.Marshal(c)
	if err != nil {
		return tools.Block{Type: "text", Text: fmt.Sprint(c)}
	}
	return tools.Block{Type: "text", Text: string(b)}
}
