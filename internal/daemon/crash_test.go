package daemon

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/storage"
	"github.com/switchboardhq/switchboard/internal/store"
)

const crashChildEnv = "SWITCHBOARD_CRASH_CHILD_STATE"

// TestCrashMidRun kills a gateway process with SIGKILL while a run is
// streaming from the model, restarts on the same state dir, and checks the
// database is consistent: the run is aborted, the session has
// abortedLastRun, the input message is in the transcript, and the session
// takes new runs.
func TestCrashMidRun(t *testing.T) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(t, dir)
		return
	}
	llm := fakellm.Start(t, fakellm.Options{APIKey: "test-key"})
	dir := t.TempDir()
	writeConfig(t, dir, llm.URL())

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashMidRun$", "-test.v")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	runID := ""
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "STREAMING "); ok {
			runID = id
			break
		}
	}
	if runID == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child never reported a streaming run (scan err %v)", sc.Err())
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no cleanup runs
		t.Fatal(err)
	}
	cmd.Wait()

	// The database file is intact before anything repairs it.
	db, err := sql.Open("sqlite", filepath.Join(dir, storage.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	var check string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check = %q, %v", check, err)
	}
	var status string
	if err := db.QueryRow("SELECT status FROM runs WHERE run_id = ?", runID).Scan(&status); err != nil || status != "running" {
		t.Fatalf("run status before restart = %q, %v", status, err)
	}
	db.Close()

	d := startDaemon(t, dir)
	defer d.Close()
	run, err := d.Store.GetRun(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.RunAborted || run.EndedAt.IsZero() || run.Error != "run interrupted by gateway restart" {
		t.Errorf("run after restart = %+v", run)
	}
	sess, err := d.Store.GetSession(ctx, "agent:main:main")
	if err != nil {
		t.Fatal(err)
	}
	if !sess.AbortedLastRun {
		t.Error("abortedLastRun not set after restart")
	}
	msgs, err := d.Store.History(ctx, sess.SessionID, store.HistoryOptions{})
	if err != nil || len(msgs) != 1 || msgs[0].Role != "user" || !strings.HasPrefix(msgs[0].Entry.Message.Content.Text(), "/reply partial") {
		t.Fatalf("transcript after restart = %d msgs, %v", len(msgs), err)
	}
	// Waiting on the interrupted run ends at once with its final status.
	if got, done, _ := d.Runner.Wait(ctx, runID, 5*time.Second); !done || got.Status != store.RunAborted {
		t.Errorf("Wait(interrupted) = %+v, %v", got, done)
	}
	// The session works again, and a successful run clears abortedLastRun.
	if _, _, err := d.Runner.Submit(ctx, agent.Input{RunID: "after", SessionKey: "agent:main:main", AgentID: "main", Message: "hi again"}); err != nil {
		t.Fatal(err)
	}
	if got, done, _ := d.Runner.Wait(ctx, "after", 20*time.Second); !done || got.Status != store.RunOK {
		t.Fatalf("run after restart = %+v", got)
	}
	sess, _ = d.Store.GetSession(ctx, "agent:main:main")
	if sess.AbortedLastRun {
		t.Error("abortedLastRun still set after a good run")
	}
}

// crashChild is the gateway process that gets killed: it starts a run whose
// model streams one delta and then stalls, reports it, and waits.
func crashChild(t *testing.T, dir string) {
	d := startDaemon(t, dir)
	streaming := make(chan string, 1)
	d.Runner.Subscribe(func(ev agent.Event) {
		if ev.Stream == agent.StreamAssistant {
			select {
			case streaming <- ev.RunID:
			default:
			}
		}
	})
	ctx := context.Background()
	if _, _, err := d.Runner.Submit(ctx, agent.Input{RunID: "doomed", SessionKey: "agent:main:main", AgentID: "main",
		Message: "/reply partial\n/stall"}); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-streaming:
		fmt.Printf("STREAMING %s\n", id)
	case <-time.After(30 * time.Second):
		t.Fatal("run never streamed")
	}
	time.Sleep(time.Minute) // killed long before this
}
