package wire

// MethodMCPList reports the configured MCP servers (mcp.servers), their
// state and tools (Switchboard's own method; `switchboard mcp list`).
const MethodMCPList = "mcp.list"

// addMcpSchemas adds the schemas of this file's methods.
func addMcpSchemas(methodSchemas map[string]*Schema) { methodSchemas[MethodMCPList] = Object(nil) }

// MCPServer is one entry of mcp.list's "servers".
type MCPServer struct {
	Name      string   `json:"name"`
	Transport string   `json:"transport"`
	Target    string   `json:"target"`
	State     string   `json:"state"`
	Tools     []string `json:"tools"`
	PID       int      `json:"pid,omitempty"`
	Restarts  int      `json:"restarts"`
	LastError string   `json:"lastError,omitempty"`
}

// MCPListResult is mcp.list's result.
type MCPListResult struct {
	Servers []MCPServer `json:"servers"`
}
