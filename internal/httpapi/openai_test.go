package httpapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/store"
)

// client is the official OpenAI Go client pointed at the gateway.
func (g *gw) client() openai.Client {
	return openai.NewClient(option.WithBaseURL(g.base+"/v1/"), option.WithAPIKey(token), option.WithMaxRetries(0))
}

// sessionMessages returns the transcript texts of a session.
func (g *gw) sessionMessages(key string) []string {
	g.t.Helper()
	ctx := context.Background()
	sess, err := g.d.Store.GetSession(ctx, key)
	if err != nil {
		g.t.Fatalf("session %s: %v", key, err)
	}
	msgs, err := g.d.Store.History(ctx, sess.SessionID, store.HistoryOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		if m.Entry.Message != nil {
			out = append(out, string(m.Entry.Message.Role)+": "+m.Entry.Message.Content.Text())
		}
	}
	return out
}

func TestOpenAIGoClient(t *testing.T) {
	g := startGateway(t, "", fakellm.Options{})
	c := g.client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t.Run("models", func(t *testing.T) {
		page, err := c.Models.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range page.Data {
			ids = append(ids, m.ID)
			if m.Object != "model" || m.OwnedBy != "openclaw" {
				t.Errorf("model = %+v", m)
			}
		}
		if strings.Join(ids, ",") != "openclaw,openclaw/default,openclaw/main,openclaw/ops" {
			t.Errorf("ids = %q", ids)
		}
		m, err := c.Models.Get(ctx, "openclaw/ops")
		if err != nil || m.ID != "openclaw/ops" {
			t.Errorf("get = %+v, %v", m, err)
		}
		_, err = c.Models.Get(ctx, "openclaw/ghost")
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || !strings.Contains(apiErr.Message, "Model 'openclaw/ghost' not found.") {
			t.Errorf("unknown model err = %v", err)
		}
	})

	t.Run("chat plain", func(t *testing.T) {
		comp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    "openclaw/default",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("/usage 11 7\nhello")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(comp.ID, "chatcmpl_") || comp.Object != "chat.completion" || comp.Model != "openclaw/default" || len(comp.Choices) != 1 {
			t.Fatalf("completion = %+v", comp)
		}
		ch := comp.Choices[0]
		if ch.Message.Content != "echo: hello" || ch.FinishReason != "stop" || ch.Message.Role != "assistant" {
			t.Errorf("choice = %+v", ch)
		}
		if comp.Usage.PromptTokens != 11 || comp.Usage.CompletionTokens != 7 || comp.Usage.TotalTokens != 18 {
			t.Errorf("usage = %+v", comp.Usage)
		}
		// The system message reached the model as part of the system prompt.
		reqs := g.llm.Requests()
		if last := reqs[len(reqs)-1].Request; !strings.Contains(last.System, "be brief") {
			t.Errorf("system prompt lacks the system message: %q", last.System)
		}
	})

	t.Run("chat stream", func(t *testing.T) {
		stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model:         "openclaw/ops",
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("streamed words here")},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		})
		acc := openai.ChatCompletionAccumulator{}
		chunks, sawRole, sawUsage := 0, false, false
		for stream.Next() {
			ch := stream.Current()
			acc.AddChunk(ch)
			chunks++
			if ch.Object != "chat.completion.chunk" || !strings.HasPrefix(ch.ID, "chatcmpl_") {
				t.Errorf("chunk = %+v", ch)
			}
			if len(ch.Choices) > 0 && ch.Choices[0].Delta.Role == "assistant" {
				sawRole = true
			}
			if len(ch.Choices) == 0 && ch.Usage.TotalTokens > 0 {
				sawUsage = true
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if got := acc.Choices[0].Message.Content; got != "echo: streamed words here" {
			t.Errorf("streamed content = %q", got)
		}
		if !sawRole || !sawUsage || chunks < 4 || acc.Choices[0].FinishReason != "stop" {
			t.Errorf("chunks=%d role=%v usage=%v finish=%q", chunks, sawRole, sawUsage, acc.Choices[0].FinishReason)
		}
	})

	t.Run("user keeps one session", func(t *testing.T) {
		for _, msg := range []string{"first", "second"} {
			comp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
				Model: "openclaw", User: openai.String("conv-42"),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(msg)},
			})
			if err != nil || comp.Choices[0].Message.Content != "echo: "+msg {
				t.Fatalf("%s: %+v %v", msg, comp, err)
			}
		}
		got := strings.Join(g.sessionMessages("agent:main:openai-user:conv-42"), "|")
		if got != "user: first|assistant: echo: first|user: second|assistant: echo: second" {
			t.Errorf("transcript = %s", got)
		}
		// The model saw the earlier turn as history in the second call.
		reqs := g.llm.Requests()
		if n := len(reqs[len(reqs)-1].Request.Messages); n != 3 {
			t.Errorf("second call sent %d messages, want 3 (history kept)", n)
		}
	})

	t.Run("responses", func(t *testing.T) {
		r1, err := c.Responses.New(ctx, responses.ResponseNewParams{
			Model: "openclaw", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("one")},
			Instructions: openai.String("answer plainly"),
		})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(r1.ID, "resp_") || string(r1.Status) != "completed" || r1.OutputText() != "echo: one" {
			t.Fatalf("response = %+v", r1)
		}
		r2, err := c.Responses.New(ctx, responses.ResponseNewParams{
			Model: "openclaw", PreviousResponseID: openai.String(r1.ID),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("two")},
		})
		if err != nil || r2.OutputText() != "echo: two" {
			t.Fatalf("continued response = %+v, %v", r2, err)
		}
		// Both turns ran in one session.
		keys := 0
		sessions, err := g.d.Store.ListSessions(ctx, store.ListOptions{Search: "openresponses"})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sessions {
			msgs := g.sessionMessages(s.Key)
			if len(msgs) == 4 && msgs[0] == "user: one" && msgs[2] == "user: two" {
				keys++
			}
		}
		if keys != 1 {
			t.Errorf("no single session holds both turns: %d sessions", len(sessions))
		}
	})

	t.Run("responses stream", func(t *testing.T) {
		stream := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{
			Model: "openclaw/ops", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("stream me")},
		})
		var types []string
		var text strings.Builder
		var final string
		for stream.Next() {
			ev := stream.Current()
			if len(types) == 0 || types[len(types)-1] != ev.Type {
				types = append(types, ev.Type)
			}
			switch ev.Type {
			case "response.output_text.delta":
				text.WriteString(ev.Delta)
			case "response.completed":
				final = ev.Response.OutputText()
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		want := "response.created,response.in_progress,response.output_item.added,response.content_part.added," +
			"response.output_text.delta,response.output_text.done,response.content_part.done,response.output_item.done,response.completed"
		if strings.Join(types, ",") != want {
			t.Errorf("event types = %s", strings.Join(types, ","))
		}
		if text.String() != "echo: stream me" || final != "echo: stream me" {
			t.Errorf("deltas %q, final %q", text.String(), final)
		}
	})
}

// TestChatRoutingHeaders: x-openclaw-session-key routes to an explicit
// session, x-openclaw-agent-id picks the agent, x-openclaw-model overrides
// the agent's model for the run, x-openclaw-message-channel sets the
// run's channel.
func TestChatRoutingHeaders(t *testing.T) {
	g := startGateway(t, "", fakellm.Options{})
	body := `{"model":"openclaw","messages":[{"role":"user","content":"routed"}]}`
	status, _, b := g.do("POST", "/v1/chat/completions", body,
		"X-Openclaw-Session-Key", "my-app:thread-1", "X-Openclaw-Agent-Id", "ops",
		"X-Openclaw-Model", "fake/fake-2", "X-Openclaw-Message-Channel", "Slack")
	if status != 200 || !strings.Contains(string(b), "echo: routed") {
		t.Fatalf("status %d: %s", status, b)
	}
	if got := strings.Join(g.sessionMessages("agent:ops:my-app:thread-1"), "|"); got != "user: routed|assistant: echo: routed" {
		t.Errorf("explicit session transcript = %q", got)
	}
	reqs := g.llm.Requests()
	if m := reqs[len(reqs)-1].Request.Model; m != "fake-2" {
		t.Errorf("model sent to the provider = %q, want fake-2", m)
	}
	sess, err := g.d.Store.GetSession(context.Background(), "agent:ops:my-app:thread-1")
	if err != nil || sess.LastChannel != "slack" {
		t.Errorf("session = %+v, %v", sess, err)
	}
	// Without user or session key, each request is its own session.
	for range 2 {
		if status, _, b := g.do("POST", "/v1/chat/completions", body); status != 200 {
			t.Fatalf("status %d: %s", status, b)
		}
	}
	sessions, err := g.d.Store.ListSessions(context.Background(), store.ListOptions{Search: "agent:main:openai:"})
	if err != nil || len(sessions) != 2 {
		t.Errorf("stateless sessions = %d, %v", len(sessions), err)
	}
}

// TestChatSendPolicy: a session the send policy denies gets 403 and no
// run; other sessions still answer.
func TestChatSendPolicy(t *testing.T) {
	g := startGatewayWith(t, "", `session: { sendPolicy: { default: "allow", rules: [{ action: "deny", match: { keyPrefix: "agent:main:blocked" } }] } },`,
		fakellm.Options{}, false)
	body := `{"model":"openclaw","messages":[{"role":"user","content":"hi"}]}`
	status, _, b := g.do("POST", "/v1/chat/completions", body, "X-Openclaw-Session-Key", "blocked-thread")
	if typ, msg := errorOf(t, b); status != 403 || typ != "forbidden" || msg == "" {
		t.Errorf("denied session = %d %s", status, b)
	}
	if n := g.llm.Count(); n != 0 {
		t.Errorf("a denied send reached the model %d times", n)
	}
	if status, _, b := g.do("POST", "/v1/chat/completions", body, "X-Openclaw-Session-Key", "open-thread"); status != 200 {
		t.Errorf("allowed session = %d %s", status, b)
	}
}
