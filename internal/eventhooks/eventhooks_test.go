package eventhooks

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFire(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	d := New([]Handler{
		{Name: "family", Events: []string{"session"}, Command: `cat > ` + out + `; echo >> ` + out + `; echo "$SWITCHBOARD_HOOK_NAME $GREETING" >> ` + out, Env: map[string]string{"GREETING": "hi"}},
		{Name: "other", Events: []string{CommandNew}, Command: "touch " + filepath.Join(dir, "new")},
		{Name: "slow", Events: []string{CompactAfter}, Command: "sleep 5", Timeout: 100 * time.Millisecond},
	}, nil)
	d.Fire(context.Background(), CompactBefore, map[string]any{"sessionKey": "agent:main:main"})
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	body, tail, _ := strings.Cut(string(raw), "\n")
	var ev map[string]any
	if err := json.Unmarshal([]byte(body), &ev); err != nil {
		t.Fatalf("stdin %q: %v", body, err)
	}
	if ev["event"] != CompactBefore || ev["type"] != "session" || ev["action"] != "compact:before" || ev["sessionKey"] != "agent:main:main" || ev["timestamp"] == nil {
		t.Errorf("event = %v", ev)
	}
	if strings.TrimSpace(tail) != "family hi" {
		t.Errorf("env = %q", tail)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Error("a command:new hook ran on a compaction")
	}
	start := time.Now()
	d.Fire(context.Background(), CompactAfter, nil)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("a hook past its timeout held the event for %v", took)
	}
	var nilD *Dispatcher
	nilD.Fire(context.Background(), Startup, nil) // no handlers, no panic
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		h    Handler
		want string
	}{
		{Handler{Name: "a", Events: []string{CompactBefore}, Command: "true"}, ""},
		{Handler{Name: "b", Events: []string{"session"}, Command: "true"}, ""},
		{Handler{Name: "c", Events: []string{CompactBefore}}, "command required"},
		{Handler{Name: "d", Command: "true"}, "events required"},
		{Handler{Name: "e", Events: []string{"message:received"}, Command: "true"}, `unknown event "message:received"`},
	} {
		err := Validate(tc.h)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%s) = %v, want %q", tc.h.Name, err, tc.want)
		}
	}
}
