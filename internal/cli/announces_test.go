package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func TestPrintAnnounces(t *testing.T) {
	var b bytes.Buffer
	err := printAnnounces(&b, []wire.AnnounceRow{
		{ID: "announce:r1:agent:main:main", SessionKey: "agent:main:main", Status: "dead", Attempts: 12,
			LastError: "submit: requester lane closed\nafter shutdown"},
		{ID: "announce:r2:agent:main:main", SessionKey: "agent:main:main", Status: "delivered", Attempts: 0},
	}, "all")
	if err != nil {
		t.Fatal(err)
	}
	want := `ID                           TARGET           STATUS     ATTEMPTS  LAST ERROR
announce:r1:agent:main:main  agent:main:main  dead       12        submit: requester lane closed after shutdown
announce:r2:agent:main:main  agent:main:main  delivered  0         -
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	for status, want := range map[string]string{"dead": "No dead announces.\n", "all": "No announces.\n", "": "No announces.\n"} {
		b.Reset()
		printAnnounces(&b, nil, status)
		if b.String() != want {
			t.Errorf("empty %q = %q, want %q", status, b.String(), want)
		}
	}
}

func TestAnnouncesCommands(t *testing.T) {
	g := startGateway(t, "")
	_, runID := g.spawnNoWait("report back\n/reply all done")
	g.mustRun("subagents", "wait", runID)

	// The completion is announced to main once its lane is idle.
	id := "announce:" + runID + ":agent:main:main"
	deadline := time.Now().Add(10 * time.Second)
	for {
		var res wire.AnnouncesListResult
		if err := json.Unmarshal([]byte(g.mustRun("announces", "list", "--status", "delivered", "--json")), &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Announces) == 1 && res.Announces[0].ID == id {
			a := res.Announces[0]
			if a.SessionKey != "agent:main:main" || a.RunID != runID || a.DeliveredAt == 0 || a.CreatedAt == 0 {
				t.Errorf("announce = %+v", a)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("announce %s not delivered: %+v", id, res.Announces)
		}
		time.Sleep(50 * time.Millisecond)
	}

	out := g.mustRun("announces", "list", "--status", "all")
	if row := rowOf(out, id); !strings.HasPrefix(out, "ID ") || !strings.Contains(row, "agent:main:main") || !strings.Contains(row, "delivered") {
		t.Errorf("announces list --status all:\n%s", out)
	}
	if out := g.mustRun("announces", "list"); out != "No dead announces.\n" {
		t.Errorf("announces list = %q", out)
	}
	if out := g.mustRun("announces", "list", "--status", "pending"); out != "No pending announces.\n" {
		t.Errorf("announces list --status pending = %q", out)
	}
	if r := g.run("announces", "list", "--status", "lost"); !strings.HasPrefix(r.errText(), "error: INVALID_REQUEST: invalid announces.list params") {
		t.Errorf("bad status = %v", r.err)
	}
	if r := g.run("announces", "redeliver", id); !strings.Contains(r.errText(), "already delivered") {
		t.Errorf("redeliver delivered = %v", r.err)
	}
	if r := g.run("announces", "redeliver", "nope"); r.errText() != "error: INVALID_REQUEST: announce not found: nope" {
		t.Errorf("redeliver unknown = %v", r.err)
	}
}
