package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// TestClusterSessionPatchedElsewhere: node 0 runs a session's turns and
// serves the next turn's admission the session row from its memory; the
// session is patched on node 1 (send policy deny) in between. The next
// message on node 0 is refused: the remembered row is checked in the
// run's open, which finds it moved, and admission reads the patched row.
// Nothing of the refused message is stored.
func TestClusterSessionPatchedElsewhere(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	_, nodes := startCluster(t, 2, llm, "")
	a, b := nodes[0].dial(t), nodes[1].dial(t)
	const key = "agent:main:patched"
	for i := range 2 {
		res := call(t, a, "chat.send", map[string]any{"sessionKey": key, "message": fmt.Sprintf("/reply turn %d", i), "idempotencyKey": fmt.Sprintf("warm%d", i)})
		w := call(t, a, "agent.wait", map[string]any{"runId": res["runId"], "timeoutMs": 20000})
		if w["status"] != "ok" {
			t.Fatalf("turn %d = %v", i, w)
		}
	}
	call(t, b, "sessions.patch", map[string]any{"key": key, "sendPolicy": "deny"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var res map[string]any
	err := a.Call(ctx, "chat.send", map[string]any{"sessionKey": key, "message": "after the patch", "idempotencyKey": "after"}, &res)
	if err == nil || !strings.Contains(err.Error(), sendBlocked) {
		t.Fatalf("chat.send on node 0 after node 1's patch = %v, %v; want %q", res, err, sendBlocked)
	}
	for _, line := range texts(history(t, b, key)) {
		if strings.Contains(line, "after the patch") {
			t.Errorf("the refused message is in the history: %q", line)
		}
	}
}
