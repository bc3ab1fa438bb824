package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func TestWriteNodes(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	l := &wire.NodesList{NodeID: "a:1", Backend: "postgres", LeaseMs: 10000, Nodes: []wire.Node{
		{NodeID: "a:1", Address: "10.0.0.1:18789", State: "active", Alive: true, Self: true, LeaseExpiresAtMs: 1_008_000, ActiveRuns: 2, QueuedRuns: 5, Lanes: 3, Version: "1.2"},
		{NodeID: "b:1", Address: "10.0.0.2:18789", State: "leaving", Alive: true, LeaseExpiresAtMs: 1_001_500},
		{NodeID: "c:1", State: "active", Alive: false, LeaseExpiresAtMs: 997_000},
	}}
	var b strings.Builder
	if err := writeNodes(&b, l, now); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"NODE   ADDRESS         STATE               LEASE         RUNNING  QUEUED  LANES  VERSION",
		"a:1 *  10.0.0.1:18789  active              ends in 8s    2        5       3      1.2",
		"b:1    10.0.0.2:18789  leaving             ends in 1.5s  0        0       0      -",
		"c:1    -               dead (lease ended)  ended 3s ago  0        0       0      -",
	}
	got := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("got\n%s", b.String())
	}
	for i := range want {
		if strings.TrimRight(got[i], " ") != want[i] {
			t.Errorf("line %d:\n got %q\nwant %q", i, got[i], want[i])
		}
	}
}
