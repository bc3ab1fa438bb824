package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/policy"
)

func TestMessagesQueue(t *testing.T) {
	src := `{
  messages: {
    queue: {
      mode: "coalesce",
      cap: 5,
      drop: "old",
      byChannel: { discord: "interrupt" },
      debounceMsByChannel: { discord: 1000 },
    },
  },
}`
	c, warns, err := Parse("q.json5", []byte(src), testEnv(nil))
	if err != nil || len(warns) > 0 {
		t.Fatalf("Parse: %v %v", err, warns)
	}
	got := policy.ResolveQueue(policy.QueueInput{Channel: "discord", Config: c.QueueConfig()})
	want := policy.QueueSettings{Mode: policy.QueueInterrupt, DebounceMs: 1000, Cap: 5, Drop: policy.DropOld}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resolved (-want +got):\n%s", diff)
	}
	if got := policy.ResolveQueue(policy.QueueInput{Config: (&Config{}).QueueConfig()}); got.Mode != policy.QueueSteer || got.Cap != 20 || got.DebounceMs != 500 || got.Drop != policy.DropSummarize {
		t.Errorf("defaults = %+v", got)
	}
}

func TestMessagesQueueBad(t *testing.T) {
	src := `{
  messages: {
    queue: {
      mode: "sideways",
      cap: 0,
      drop: "random",
      byChannel: { discord: "later" },
      debounceMsByChannel: { discord: -5 },
      debounce: 3,
    },
  },
}`
	_, warns, err := Parse("q.json5", []byte(src), testEnv(nil))
	if err == nil {
		t.Fatal("bad messages.queue accepted")
	}
	for _, want := range []string{
		`q.json5:4: messages.queue.mode: must be one of "steer", "followup", "collect", "interrupt", got "sideways"`,
		`q.json5:5: messages.queue.cap: must be a positive integer, got 0`,
		`q.json5:6: messages.queue.drop: must be one of "summarize", "old", "new", got "random"`,
		`q.json5:7: messages.queue.byChannel.discord: must be one of "steer", "followup", "collect", "interrupt", got "later"`,
		`q.json5:8: messages.queue.debounceMsByChannel.discord: must be at least 0, got -5`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if len(warns) != 1 || !strings.Contains(warns[0].String(), "messages.queue.debounce: unknown key") {
		t.Errorf("warnings = %v, want the unknown key", warns)
	}
}
