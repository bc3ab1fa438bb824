package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/switchboardhq/switchboard/internal/config"
)

// A state dir that stops taking writes turns /readyz false with the cause,
// and it turns true again once the directory is writable.
func TestReadinessFollowsTheStateDir(t *testing.T) {
	dir := t.TempDir()
	port := 0
	d, err := Start(context.Background(), Options{
		Env:    config.MapEnv(map[string]string{config.EnvStateDir: dir, "HOME": dir}),
		Port:   &port,
		Stdout: io.Discard,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var broken atomic.Bool
	d.readiness.Probe = func(string) error {
		if broken.Load() {
			return errors.New("open .probe-1: read-only file system")
		}
		return nil
	}
	readyz := func() (int, map[string]any) {
		resp, err := http.Get("http://" + d.Addrs[0].String() + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	if code, m := readyz(); code != 200 || m["ready"] != true {
		t.Fatalf("readyz = %d %v", code, m)
	}
	broken.Store(true)
	d.readiness.Check()
	code, m := readyz()
	failing, _ := m["failing"].([]any)
	if code != http.StatusServiceUnavailable || m["ready"] != false || len(failing) != 1 || failing[0] != "state dir not writable: open .probe-1: read-only file system" {
		t.Errorf("readyz while broken = %d %v", code, m)
	}
	broken.Store(false)
	d.readiness.Check()
	if code, m := readyz(); code != 200 || m["ready"] != true {
		t.Errorf("readyz after recovery = %d %v", code, m)
	}
}
