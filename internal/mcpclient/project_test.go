package mcpclient

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard/internal/tools"
)

func TestToolName(t *testing.T) {
	for _, tc := range []struct{ server, tool, want string }{
		{"everything", "echo", "everything__echo"},
		{"fs", "read_file", "fs__read_file"},
		{"docs", "get-library.docs v2", "docs__get-library_docs_v2"},
		{"s", "x" + string(make([]byte, 0)) + "ü", "s__x_"},
		{"long", "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnop", "long__abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdef"},
	} {
		if got := ToolName(tc.server, tc.tool); got != tc.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
		}
		if len(ToolName(tc.server, tc.tool)) > 64 {
			t.Errorf("ToolName(%q, %q) is longer than 64", tc.server, tc.tool)
		}
	}
}

func TestProject(t *testing.T) {
	text := func(s string) tools.Block { return tools.Block{Type: "text", Text: s} }
	for _, tc := range []struct {
		name       string
		res        *sdk.CallToolResult
		wantBlocks []tools.Block
		wantText   string
		wantDet    map[string]any
	}{
		{
			name:       "text",
			res:        &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Echo: hi"}}},
			wantBlocks: []tools.Block{text("Echo: hi")},
			wantText:   "Echo: hi",
			wantDet:    map[string]any{"mcpServer": "srv", "mcpTool": "tool"},
		},
		{
			name: "image and text",
			res: &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "a tiny image:"}, &sdk.ImageContent{Data: []byte("PNG"), MIMEType: "image/png"},
			}},
			wantBlocks: []tools.Block{text("a tiny image:"), {Type: "image", Data: "UE5H", MimeType: "image/png"}},
			wantText:   "a tiny image:\n[image image/png, 4 base64 bytes]",
			wantDet:    map[string]any{"mcpServer": "srv", "mcpTool": "tool"},
		},
		{
			name: "structured content first, mirrored text dropped",
			res: &sdk.CallToolResult{
				Content:           []sdk.Content{&sdk.TextContent{Text: `{"temperature": 33, "conditions": "Cloudy"}`}, &sdk.TextContent{Text: "extra"}},
				StructuredContent: map[string]any{"temperature": 33, "conditions": "Cloudy"},
			},
			wantBlocks: []tools.Block{text("structuredContent:\n{\n  \"conditions\": \"Cloudy\",\n  \"temperature\": 33\n}"), text("extra")},
			wantText:   "structuredContent:\n{\n  \"conditions\": \"Cloudy\",\n  \"temperature\": 33\n}\nextra",
			wantDet: map[string]any{"mcpServer": "srv", "mcpTool": "tool",
				"structuredContent": map[string]any{"conditions": "Cloudy", "temperature": 33.0}},
		},
		{
			name:       "error without content",
			res:        &sdk.CallToolResult{IsError: true},
			wantBlocks: []tools.Block{text("MCP tool failed without returning content.")},
			wantText:   "MCP tool failed without returning content.",
			wantDet:    map[string]any{"mcpServer": "srv", "mcpTool": "tool", "status": "error"},
		},
		{
			name:       "empty success",
			res:        &sdk.CallToolResult{},
			wantBlocks: []tools.Block{text("MCP tool completed without returning content.")},
			wantText:   "MCP tool completed without returning content.",
			wantDet:    map[string]any{"mcpServer": "srv", "mcpTool": "tool"},
		},
		{
			name: "audio, links and resources as text",
			res: &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.AudioContent{Data: []byte("x"), MIMEType: "audio/wav"},
				&sdk.ResourceLink{URI: "demo://r/1", Name: "r1"},
				&sdk.ResourceLink{URI: "demo://r/2", Name: "r2", Title: "Two"},
				&sdk.ResourceLink{URI: "demo://r/3"},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "demo://t", Text: "inline text"}},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "demo://b", Blob: []byte{1}}},
			}},
			wantBlocks: []tools.Block{text("[audio audio/wav]"), text("[r1] demo://r/1"), text("[Two] demo://r/2"),
				text("demo://r/3"), text("inline text"), text("demo://b")},
			wantText: "[audio audio/wav]\n[r1] demo://r/1\n[Two] demo://r/2\ndemo://r/3\ninline text\ndemo://b",
			wantDet:  map[string]any{"mcpServer": "srv", "mcpTool": "tool"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Project(tc.res, "srv", "tool")
			if diff := cmp.Diff(tc.wantBlocks, got.Blocks); diff != "" {
				t.Errorf("blocks (-want +got):\n%s", diff)
			}
			if got.Text != tc.wantText {
				t.Errorf("text = %q, want %q", got.Text, tc.wantText)
			}
			b, _ := json.Marshal(got.Details)
			var det map[string]any
			json.Unmarshal(b, &det)
			want, _ := json.Marshal(tc.wantDet)
			var wantDet map[string]any
			json.Unmarshal(want, &wantDet)
			if diff := cmp.Diff(wantDet, det); diff != "" {
				t.Errorf("details (-want +got):\n%s", diff)
			}
			if got.IsError != tc.res.IsError {
				t.Errorf("isError = %v", got.IsError)
			}
		})
	}
}
