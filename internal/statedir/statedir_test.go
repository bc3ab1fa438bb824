package statedir

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAcquireExclusive(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Record{PID: os.Getpid(), URL: "ws://127.0.0.1:48001", Addrs: []string{"127.0.0.1:48001"}, Version: "v1", StartedAt: time.Unix(100, 0).UTC()}
	if err := l.Write(want); err != nil {
		t.Fatal(err)
	}

	_, err = Acquire(dir)
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
		t.Fatalf("second Acquire: %v, want *LockedError", err)
	}
	if le.Holder.PID != want.PID || le.Holder.URL != want.URL {
		t.Fatalf("holder = %+v, want %+v", le.Holder, want)
	}
	for _, s := range []string{"already running", "pid ", "ws://127.0.0.1:48001"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}

	rec, ok, err := Running(dir)
	if err != nil || !ok {
		t.Fatalf("Running = %v, %v", ok, err)
	}
	if rec.URL != want.URL || rec.PID != want.PID || rec.Version != "v1" || len(rec.Addrs) != 1 {
		t.Fatalf("Running record = %+v", rec)
	}

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("second Close = %v, want net.ErrClosed", err)
	}
	if err := l.Write(want); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close = %v", err)
	}
	if _, ok, err := Running(dir); ok || err != nil {
		t.Fatalf("Running after Close = %v, %v", ok, err)
	}
	l2, err := Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire after Close: %v", err)
	}
	l2.Close()
}

func TestRunningNoFile(t *testing.T) {
	if _, ok, err := Running(t.TempDir()); ok || err != nil {
		t.Fatalf("Running = %v, %v", ok, err)
	}
}

// A record left behind by a process that died (no lock held) is stale.
func TestStaleRecordIgnored(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, LockFile), []byte(`{"pid":999999,"url":"ws://127.0.0.1:1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := Running(dir); ok || err != nil {
		t.Fatalf("Running = %v, %v; want not running", ok, err)
	}
	l, err := Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire over a stale record: %v", err)
	}
	defer l.Close()
}

// The lock is held by another process and released when it dies (kill -9).
func TestLockAcrossProcesses(t *testing.T) {
	if os.Getenv("STATEDIR_HOLD") != "" {
		l, err := Acquire(os.Getenv("STATEDIR_HOLD"))
		if err != nil {
			os.Exit(3)
		}
		l.Write(Record{PID: os.Getpid(), URL: "ws://127.0.0.1:5"})
		os.Stdout.WriteString("held\n")
		time.Sleep(time.Minute)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockAcrossProcesses$")
	cmd.Env = append(os.Environ(), "STATEDIR_HOLD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "held\n" {
		t.Fatalf("child: %q %v", buf, err)
	}
	_, err = Acquire(dir)
	var le *LockedError
	if !errors.As(err, &le) || le.Holder.PID != cmd.Process.Pid {
		t.Fatalf("Acquire while child holds: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire after the holder died: %v", err)
	}
	l.Close()
}
