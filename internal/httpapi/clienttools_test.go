package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/fakellm"
)

const weatherTool = `{"type":"function","function":{"name":"get_weather","description":"Weather by city",
	"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`

// lastModelRequest decodes the body of the model's latest request.
func (g *gw) lastModelRequest() map[string]any {
	g.t.Helper()
	reqs := g.llm.Requests()
	if len(reqs) == 0 {
		g.t.Fatal("the model got no request")
	}
	return decode(g.t, reqs[len(reqs)-1].Body)
}

// offeredTools lists the tool names of a model request.
func offeredTools(req map[string]any) []string {
	var names []string
	list, _ := req["tools"].([]any)
	for _, t := range list {
		fn, _ := t.(map[string]any)["function"].(map[string]any)
		names = append(names, fn["name"].(string))
	}
	return names
}

func systemText(req map[string]any) string {
	msgs, _ := req["messages"].([]any)
	for _, m := range msgs {
		if mm := m.(map[string]any); mm["role"] == "system" {
			s, _ := mm["content"].(string)
			return s
		}
	}
	return ""
}

// TestClientFunctionTools covers the chat tool contract: the caller's
// function tools are offered to the agent, a call of one ends the turn
// with finish_reason tool_calls, the follow-up carries the result, and
// tool_choice narrows and requires.
func TestClientFunctionTools(t *testing.T) {
	g := startGateway(t, "", fakellm.Options{})

	t.Run("call and follow-up", func(t *testing.T) {
		status, _, b := g.do("POST", "/v1/chat/completions", `{"model":"openclaw","user":"tools-1","tools":[`+weatherTool+`],
			"messages":[{"role":"user","content":"/tool get_weather {\"city\":\"Paris\"}"}]}`)
		if status != 200 {
			t.Fatalf("status %d: %s", status, b)
		}
		if names := offeredTools(g.lastModelRequest()); !strings.Contains(strings.Join(names, ","), "get_weather") || !strings.Contains(strings.Join(names, ","), "sessions_list") {
			t.Errorf("model offered %v, want the agent's tools and get_weather", names)
		}
		var res struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
				Message      struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						ID       string `json:"id"`
						Type     string `json:"type"`
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		c := res.Choices[0]
		if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 || c.Message.Content == nil {
			t.Fatalf("reply %s", b)
		}
		call := c.Message.ToolCalls[0]
		if call.ID == "" || call.Type != "function" || call.Function.Name != "get_weather" || compactJSON(t, []byte(call.Function.Arguments)) != `{"city":"Paris"}` {
			t.Errorf("tool call %+v", call)
		}
		n := g.llm.Count()
		// The follow-up: the prior assistant call and the tool's result.
		follow := `{"model":"openclaw","user":"tools-1","tools":[` + weatherTool + `],"messages":[
			{"role":"user","content":"/tool get_weather {\"city\":\"Paris\"}"},
			{"role":"assistant","content":"","tool_calls":[{"id":"` + call.ID + `","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
			{"role":"tool","tool_call_id":"` + call.ID + `","content":"sunny, 21C"}]}`
		status, _, b = g.do("POST", "/v1/chat/completions", follow)
		if status != 200 {
			t.Fatalf("follow-up status %d: %s", status, b)
		}
		v := decode(t, b)
		choice := v["choices"].([]any)[0].(map[string]any)
		content, _ := choice["message"].(map[string]any)["content"].(string)
		if choice["finish_reason"] != "stop" || !strings.Contains(content, "sunny, 21C") {
			t.Errorf("follow-up reply %s", b)
		}
		if g.llm.Count() != n+1 {
			t.Errorf("follow-up made %d model calls, want 1", g.llm.Count()-n)
		}
	})

	t.Run("pinned choice unsatisfied", func(t *testing.T) {
		status, _, b := g.do("POST", "/v1/chat/completions", `{"model":"openclaw","tools":[`+weatherTool+`,{"type":"function","function":{"name":"other"}}],
			"tool_choice":{"type":"function","function":{"name":"get_weather"}},"messages":[{"role":"user","content":"just talk"}]}`)
		if status != 502 {
			t.Fatalf("status %d: %s", status, b)
		}
		if _, msg := errorOf(t, b); msg != "tool_choice required a get_weather tool call, but the agent did not produce one" {
			t.Errorf("error %q", msg)
		}
		req := g.lastModelRequest()
		names := strings.Join(offeredTools(req), ",")
		if !strings.Contains(names, "get_weather") || strings.Contains(names, "other") {
			t.Errorf("pinned choice offered %s", names)
		}
		if !strings.Contains(systemText(req), "You must call the get_weather tool before responding.") {
			t.Errorf("system prompt lacks the instruction: %q", systemText(req))
		}
	})

	t.Run("required choice satisfied", func(t *testing.T) {
		status, _, b := g.do("POST", "/v1/chat/completions", `{"model":"openclaw","tools":[`+weatherTool+`],"tool_choice":"required",
			"messages":[{"role":"user","content":"/tool get_weather {\"city\":\"Oslo\"}"}]}`)
		if status != 200 || !strings.Contains(string(b), `"finish_reason":"tool_calls"`) {
			t.Fatalf("status %d: %s", status, b)
		}
		if !strings.Contains(systemText(g.lastModelRequest()), "You must call one of the available tools before responding.") {
			t.Errorf("system prompt lacks the instruction")
		}
	})

	t.Run("none offers no client tool", func(t *testing.T) {
		status, _, b := g.do("POST", "/v1/chat/completions", `{"model":"openclaw","tools":[`+weatherTool+`],"tool_choice":"none",
			"messages":[{"role":"user","content":"hi"}]}`)
		if status != 200 {
			t.Fatalf("status %d: %s", status, b)
		}
		if names := strings.Join(offeredTools(g.lastModelRequest()), ","); strings.Contains(names, "get_weather") {
			t.Errorf("tool_choice none offered %s", names)
		}
	})

	t.Run("name conflicts refused", func(t *testing.T) {
		n := g.llm.Count()
		for _, tools := range []string{
			`[{"type":"function","function":{"name":"Sessions_List"}}]`,
			`[` + weatherTool + `,{"type":"function","function":{"name":"get_weather"}}]`,
		} {
			status, _, b := g.do("POST", "/v1/chat/completions", `{"model":"openclaw","tools":`+tools+`,"messages":[{"role":"user","content":"hi"}]}`)
			if typ, msg := errorOf(t, b); status != 400 || typ != "invalid_request_error" || msg != "invalid tool configuration" {
				t.Errorf("tools %s: status %d: %s", tools, status, b)
			}
			status, _, b = g.do("POST", "/v1/chat/completions", `{"model":"openclaw","stream":true,"tools":`+tools+`,"messages":[{"role":"user","content":"hi"}]}`)
			if status != 200 || !strings.Contains(string(b), `"message":"invalid tool configuration","type":"invalid_request_error"`) {
				t.Errorf("stream, tools %s: status %d: %s", tools, status, b)
			}
		}
		if g.llm.Count() != n {
			t.Errorf("conflicting tools reached the model %d times", g.llm.Count()-n)
		}
	})

	t.Run("stream", func(t *testing.T) {
		status, _, b := g.do("POST", "/v1/chat/completions", `{"model":"openclaw","stream":true,"tools":[`+weatherTool+`],
			"messages":[{"role":"user","content":"/reply let me check\n/tool get_weather {\"city\":\"Rome\"}"}]}`)
		if status != 200 {
			t.Fatalf("status %d: %s", status, b)
		}
		var args, name, id, finish, content string
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var ch struct {
				Choices []struct {
					Delta struct {
						Content   string `json:"content"`
						ToolCalls []struct {
							Index    *int   `json:"index"`
							ID       string `json:"id"`
							Function struct{ Name, Arguments string }
						} `json:"tool_calls"`
					} `json:"delta"`
					FinishReason *string `json:"finish_reason"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(data), &ch); err != nil {
				t.Fatalf("chunk %s: %v", data, err)
			}
			for _, c := range ch.Choices {
				content += c.Delta.Content
				for _, tc := range c.Delta.ToolCalls {
					if tc.Index == nil || *tc.Index != 0 {
						t.Errorf("tool call chunk without index 0: %s", data)
					}
					id += tc.ID
					name += tc.Function.Name
					args += tc.Function.Arguments
				}
				if c.FinishReason != nil {
					finish = *c.FinishReason
				}
			}
		}
		if finish != "tool_calls" || name != "get_weather" || id == "" || compactJSON(t, []byte(args)) != `{"city":"Rome"}` || content != "let me check" {
			t.Errorf("stream: finish %q name %q id %q args %q content %q\n%s", finish, name, id, args, content, b)
		}
		if !strings.HasSuffix(strings.TrimSpace(string(b)), "data: [DONE]") {
			t.Errorf("stream does not end with [DONE]")
		}
	})
}

// TestResponsesFunctionTools covers function tools on /v1/responses: a
// pending call is a function_call output item (plain and streamed), its
// function_call_output continues the conversation, and tool_choice binds.
func TestResponsesFunctionTools(t *testing.T) {
	g := startGateway(t, "", fakellm.Options{})
	const tool = `{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}`

	status, _, b := g.do("POST", "/v1/responses", `{"model":"openclaw","tools":[`+tool+`],"input":"/tool get_weather {\"city\":\"Lima\"}"}`)
	if status != 200 {
		t.Fatalf("status %d: %s", status, b)
	}
	var res struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Output []struct {
			Type, ID, Status, Name, Arguments string
			CallID                            string `json:"call_id"`
		} `json:"output"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != "completed" || len(res.Output) != 1 {
		t.Fatalf("response %s", b)
	}
	fc := res.Output[0]
	if fc.Type != "function_call" || fc.Name != "get_weather" || fc.CallID == "" || !strings.HasPrefix(fc.ID, "call_") ||
		compactJSON(t, []byte(fc.Arguments)) != `{"city":"Lima"}` || fc.Status != "completed" {
		t.Errorf("function call item %+v", fc)
	}

	status, _, b = g.do("POST", "/v1/responses", `{"model":"openclaw","tools":[`+tool+`],"previous_response_id":"`+res.ID+`",
		"input":[{"type":"function_call_output","call_id":"`+fc.CallID+`","output":"warm, 25C"}]}`)
	if status != 200 || !strings.Contains(string(b), "warm, 25C") || !strings.Contains(string(b), `"phase":"final_answer"`) {
		t.Fatalf("follow-up status %d: %s", status, b)
	}

	status, _, b = g.do("POST", "/v1/responses", `{"model":"openclaw","tools":[`+tool+`],"tool_choice":"required","input":"no tools here"}`)
	if status != 502 || !strings.Contains(string(b), "tool_choice=required was not satisfied by the agent response") {
		t.Errorf("required choice: status %d: %s", status, b)
	}

	status, _, b = g.do("POST", "/v1/responses", `{"model":"openclaw","stream":true,"tools":[`+tool+`],
		"input":"/reply one moment\n/tool get_weather {\"city\":\"Kyiv\"}"}`)
	if status != 200 {
		t.Fatalf("stream status %d: %s", status, b)
	}
	out := string(b)
	for _, want := range []string{`data: {"item":{"type":"function_call"`, `"output_index":1,"type":"response.output_item.added"`,
		`"name":"get_weather"`, `"phase":"commentary"`, "event: response.completed"} {
		if !strings.Contains(out, want) {
			t.Errorf("stream lacks %s:\n%s", want, out)
		}
	}
}
