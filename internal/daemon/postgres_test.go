package daemon

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestReadinessFollowsTheDatabase checks that /readyz turns false with the
// cause while the database refuses connections, and true again after.
func TestReadinessFollowsTheDatabase(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DB(t)
	dir := t.TempDir()
	port := 0
	d, err := Start(ctx, Options{
		Env:    config.MapEnv(map[string]string{config.EnvStateDir: dir, "HOME": dir, config.EnvDatabaseURL: dsn}),
		Port:   &port,
		Stdout: io.Discard,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
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
	d.readiness.Check()
	if code, m := readyz(); code != 200 || m["ready"] != true {
		t.Fatalf("readyz = %d %v", code, m)
	}
	// Cut the database off: no new connections, existing ones ended.
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, strings.Replace(dsn, "/"+cfg.Database+"?", "/postgres?", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	setAllow := func(allow bool) {
		t.Helper()
		if _, err := admin.Exec(ctx, `ALTER DATABASE `+cfg.Database+` ALLOW_CONNECTIONS `+map[bool]string{true: "true", false: "false"}[allow]); err != nil {
			t.Fatal(err)
		}
		if !allow {
			if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, cfg.Database); err != nil {
				t.Fatal(err)
			}
		}
	}
	setAllow(false)
	defer setAllow(true)
	time.Sleep(100 * time.Millisecond)
	d.readiness.Check()
	code, m := readyz()
	failing, _ := m["failing"].([]any)
	if code != http.StatusServiceUnavailable || len(failing) != 1 || !strings.HasPrefix(failing[0].(string), "database unreachable: ") {
		t.Errorf("readyz while the database refuses = %d %v", code, m)
	}
	setAllow(true)
	d.readiness.Check()
	if code, m := readyz(); code != 200 || m["ready"] != true {
		t.Errorf("readyz after = %d %v", code, m)
	}
}

// TestClusterNodeWarnsOfItsOwnToken: a node on PostgreSQL whose gateway
// token was generated in its own state dir says that the other nodes will
// refuse its clients' token; a configured token raises no warning.
func TestClusterNodeWarnsOfItsOwnToken(t *testing.T) {
	dsn := pgtest.DB(t)
	for _, tc := range []struct {
		name  string
		env   map[string]string
		warns bool
	}{
		{"generated token", map[string]string{}, true},
		{"shared token", map[string]string{config.EnvGatewayToken: "one-for-all"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			env := map[string]string{config.EnvStateDir: dir, "HOME": dir, config.EnvDatabaseURL: dsn}
			for k, v := range tc.env {
				env[k] = v
			}
			var logs strings.Builder
			port := 0
			d, err := Start(context.Background(), Options{
				Env: config.MapEnv(env), Port: &port, Stdout: io.Discard,
				Logger: slog.New(slog.NewTextHandler(&logs, nil)),
			})
			if err != nil {
				t.Fatal(err)
			}
			d.Close()
			if got := strings.Contains(logs.String(), "give every node of the cluster the same token"); got != tc.warns {
				t.Errorf("warned %v, want %v:\n%s", got, tc.warns, logs.String())
			}
		})
	}
}
