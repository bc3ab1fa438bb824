package logfile_test

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/logfile"
	"github.com/switchboardhq/switchboard/internal/secrets"
	"github.com/switchboardhq/switchboard/internal/store"
)

// BenchmarkRunLogLines is the log lines every run logs ("run started" at
// DEBUG, which the default level drops, and "run ended" at INFO,
// internal/agent), through the gateway's logger as the daemon builds it:
// secret masking over the text console and the JSON log file.
func BenchmarkRunLogLines(b *testing.B) {
	l := logfile.NewLogger(logfile.Settings{File: filepath.Join(b.TempDir(), "switchboard.log")}, io.Discard)
	defer l.Close()
	ref := &secrets.Ref{}
	ref.Set(secrets.New("sk-test-0123456789abcdef"))
	log := slog.New(secrets.NewLogHandler(l.Handler(), ref))
	d := 1500 * time.Microsecond
	b.ReportAllocs()
	for b.Loop() {
		log.Debug("run started", "runId", "c12-3456", "sessionKey", "agent:main:load-12", "agentId", "main")
		log.Info("run ended", "runId", "c12-3456", "sessionKey", "agent:main:load-12", "agentId", "main", "status", string(store.RunOK),
			"inputTokens", int64(120), "outputTokens", int64(42), "totalTokens", int64(162), "durationMs", d.Milliseconds())
	}
}
