package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestStorageSettings(t *testing.T) {
	const pg = "postgres://sb:s3cret@db.example:5433/switchboard?sslmode=require"
	tests := []struct {
		name    string
		file    string
		env     map[string]string
		want    StorageSettings
		problem string // substring of the validation error, "" for none
	}{
		{name: "default sqlite", want: StorageSettings{Backend: BackendSQLite}},
		{name: "explicit sqlite", file: `{storage: {backend: "sqlite"}}`, want: StorageSettings{Backend: BackendSQLite}},
		{name: "postgres from file", file: `{storage: {backend: "postgres", url: "` + pg + `"}}`,
			want: StorageSettings{Backend: BackendPostgres, URL: pg, Display: "postgres://sb@db.example:5433/switchboard", Lease: 10 * time.Second}},
		{name: "url alone selects postgres", file: `{storage: {url: "` + pg + `"}}`,
			want: StorageSettings{Backend: BackendPostgres, URL: pg, Display: "postgres://sb@db.example:5433/switchboard", Lease: 10 * time.Second}},
		{name: "env selects postgres", env: map[string]string{EnvDatabaseURL: pg},
			want: StorageSettings{Backend: BackendPostgres, URL: pg, Display: "postgres://sb@db.example:5433/switchboard", Lease: 10 * time.Second}},
		{name: "env overrides file url", file: `{storage: {backend: "postgres", url: "postgres://other/x"}}`, env: map[string]string{EnvDatabaseURL: pg},
			want: StorageSettings{Backend: BackendPostgres, URL: pg, Display: "postgres://sb@db.example:5433/switchboard", Lease: 10 * time.Second}},
		{name: "explicit sqlite wins over env", file: `{storage: {backend: "sqlite"}}`, env: map[string]string{EnvDatabaseURL: pg},
			want: StorageSettings{Backend: BackendSQLite}},
		{name: "url from a variable", file: `{storage: {backend: "postgres", url: "${PGURL}"}}`, env: map[string]string{"PGURL": pg},
			want: StorageSettings{Backend: BackendPostgres, URL: pg, Display: "postgres://sb@db.example:5433/switchboard", Lease: 10 * time.Second}},
		{name: "key=value", file: `{storage: {backend: "postgres", url: "host=/run/pg dbname=sb password=x"}}`,
			want: StorageSettings{Backend: BackendPostgres, URL: "host=/run/pg dbname=sb password=x", Display: "postgres host=/run/pg dbname=sb", Lease: 10 * time.Second}},
		{name: "node id and lease", file: `{storage: {url: "` + pg + `", nodeId: "gw-a", leaseMs: 3000}}`,
			want: StorageSettings{Backend: BackendPostgres, URL: pg, Display: "postgres://sb@db.example:5433/switchboard", NodeID: "gw-a", Lease: 3 * time.Second}},
		{name: "node id from env", file: `{storage: {url: "` + pg + `", nodeId: "gw-a"}}`, env: map[string]string{EnvNodeID: "gw-b"},
			want: StorageSettings{Backend: BackendPostgres, URL: pg, Display: "postgres://sb@db.example:5433/switchboard", NodeID: "gw-b", Lease: 10 * time.Second}},
		{name: "lease too short", file: `{storage: {url: "` + pg + `", leaseMs: 500}}`, problem: "storage.leaseMs: must be between 1000 and 300000"},
		{name: "node id with a space", file: `{storage: {url: "` + pg + `", nodeId: "a b"}}`, problem: "storage.nodeId: must be at most 128 characters without spaces"},
		{name: "postgres without url", file: "{\n storage: {backend: \"postgres\"}}", problem: `storage.url: required when storage.backend is "postgres"`},
		{name: "unknown backend", file: `{storage: {backend: "mysql"}}`, problem: `storage.backend: must be one of "sqlite", "postgres", got "mysql"`},
		{name: "not a url", file: `{storage: {url: "db.example"}}`, problem: "storage.url: must be a postgres:// URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"HOME": t.TempDir()}
			for k, v := range tt.env {
				env[k] = v
			}
			c, _, err := Parse("test.json5", []byte(tt.file), MapEnv(env))
			if tt.problem != "" {
				var ve *ValidationError
				if !errors.As(err, &ve) || !strings.Contains(err.Error(), tt.problem) {
					t.Fatalf("Parse error = %v, want one containing %q", err, tt.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.StorageSettings(); got != tt.want {
				t.Errorf("StorageSettings = %+v, want %+v", got, tt.want)
			}
			if strings.Contains(c.String(), "s3cret") {
				t.Errorf("the shown config holds the database password:\n%s", c)
			}
		})
	}
}

func TestDisplayDatabaseURL(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@h:1/db?password=pw":        "postgres://u@h:1/db",
		"postgresql://h/db":                         "postgres://h/db",
		"postgres:///db?host=/tmp/sock&password=pw": "postgres://[/tmp/sock]/db",
		"host=h port=5 dbname=d user=u password=pw": "postgres host=h dbname=d",
		"postgres://u:pw@[::1/x":                    "postgres (unparsable URL)",
	} {
		if got := DisplayDatabaseURL(in); got != want || strings.Contains(got, "pw") {
			t.Errorf("DisplayDatabaseURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzDisplayDatabaseURL checks that no URL, however malformed, shows its
// password.
func FuzzDisplayDatabaseURL(f *testing.F) {
	for _, s := range []string{
		"postgres://u:pw@h:1/db?password=pw", "postgresql://u:pw@/db?host=/tmp", "host=h password=pw dbname=d",
		"postgres://u:pw@[::1/x", "postgres://:pw@h/", "postgres://u:p%40w@h/db",
	} {
		f.Add(s, "pw")
	}
	f.Fuzz(func(t *testing.T, prefix, secret string) {
		if len(secret) < 4 || strings.ContainsAny(secret, "@/:?#[]%&= \\t\\n\\\"'") || strings.Contains(prefix, secret) {
			return
		}
		for _, raw := range []string{
			"postgres://user:" + secret + "@" + prefix + "/db",
			"postgres://user@" + prefix + "/db?password=" + secret,
			prefix + " password=" + secret,
		} {
			if got := DisplayDatabaseURL(raw); strings.Contains(got, secret) {
				t.Fatalf("DisplayDatabaseURL(%q) = %q shows the password", raw, got)
			}
		}
	})
}
