package httpapi_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// TestSamplingForwarded checks that the sampling and token-cap members of
// chat completion and responses requests reach the model's request, as
// the reference forwards them best-effort.
func TestSamplingForwarded(t *testing.T) {
	g := startGateway(t, "", fakellm.Options{})
	lastBody := func() map[string]any {
		t.Helper()
		reqs := g.llm.Requests()
		if len(reqs) == 0 {
			t.Fatal("the model got no request")
		}
		var v map[string]any
		if err := json.Unmarshal(reqs[len(reqs)-1].Body, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		name, path, body string
		want             map[string]any
		absent           []string
	}{
		{
			name: "chat all fields", path: "/v1/chat/completions",
			body: `{"model":"openclaw","messages":[{"role":"user","content":"hi"}],"temperature":0.3,"top_p":0.9,
				"frequency_penalty":-1.5,"presence_penalty":0.5,"seed":7,"stop":["END","STOP"],"max_tokens":99,"max_completion_tokens":50}`,
			want: map[string]any{"temperature": 0.3, "top_p": 0.9, "frequency_penalty": -1.5, "presence_penalty": 0.5,
				"seed": 7.0, "stop": []any{"END", "STOP"}, "max_completion_tokens": 50.0},
		},
		{
			name: "chat legacy max_tokens and a stop string", path: "/v1/chat/completions",
			body:   `{"model":"openclaw","messages":[{"role":"user","content":"hi"}],"max_tokens":12,"stop":"END","temperature":null}`,
			want:   map[string]any{"max_completion_tokens": 12.0, "stop": []any{"END"}},
			absent: []string{"temperature", "top_p", "seed"},
		},
		{
			name: "chat without sampling", path: "/v1/chat/completions",
			body:   `{"model":"openclaw","messages":[{"role":"user","content":"hi"}]}`,
			absent: []string{"temperature", "top_p", "frequency_penalty", "presence_penalty", "seed", "stop", "max_completion_tokens"},
		},
		{
			name: "responses", path: "/v1/responses",
			body:   `{"model":"openclaw","input":"hi","temperature":1.5,"top_p":0.25,"max_output_tokens":40}`,
			want:   map[string]any{"temperature": 1.5, "top_p": 0.25, "max_completion_tokens": 40.0},
			absent: []string{"seed", "stop"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, _, b := g.do("POST", tc.path, tc.body)
			if status != 200 {
				t.Fatalf("status %d: %s", status, b)
			}
			body := lastBody()
			for k, want := range tc.want {
				if got := body[k]; !reflect.DeepEqual(got, want) {
					t.Errorf("model request %s = %#v, want %#v", k, got, want)
				}
			}
			for _, k := range tc.absent {
				if got, ok := body[k]; ok {
					t.Errorf("model request has %s = %#v, want none", k, got)
				}
			}
		})
	}
}
