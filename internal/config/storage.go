package config

import (
	"cmp"
	"net/url"
	"strings"
	"time"
)

// Storage is the "storage" section, Switchboard's own (the reference keeps
// its sessions in files): where the gateway keeps sessions, transcripts,
// runs and the outbox.
type Storage struct {
	// Backend is "sqlite" (the default: a file in the state dir) or
	// "postgres".
	Backend string `json:"backend,omitempty"`
	// URL is the PostgreSQL connection URL (postgres://user:pass@host/db,
	// or key=value pairs); ${NAME} references are expanded from the
	// environment. SWITCHBOARD_DATABASE_URL overrides it.
	URL string `json:"url,omitempty"`
	// NodeID names this gateway among the nodes sharing a PostgreSQL
	// database; unique per node. Default: <hostname>:<port>.
	// SWITCHBOARD_NODE_ID overrides it.
	NodeID string `json:"nodeId,omitempty"`
	// LeaseMs is how long a node's lease lasts without a heartbeat before
	// other nodes adopt its runs (default 10000; 1000 to 300000).
	LeaseMs int `json:"leaseMs,omitempty"`
}

// EnvNodeID overrides storage.nodeId.
const EnvNodeID = "SWITCHBOARD_NODE_ID"

// Node lease bounds and default (storage.leaseMs).
const (
	DefaultLeaseMs = 10000
	minLeaseMs     = 1000
	maxLeaseMs     = 300000
)

// EnvDatabaseURL selects the PostgreSQL backend with this connection URL,
// unless storage.backend is "sqlite".
const EnvDatabaseURL = "SWITCHBOARD_DATABASE_URL"

// The storage backends.
const (
	BackendSQLite   = "sqlite"
	BackendPostgres = "postgres"
)

// StorageSettings is the effective storage configuration.
type StorageSettings struct {
	// Backend is BackendSQLite or BackendPostgres.
	Backend string
	// URL is the PostgreSQL URL, expanded; empty for SQLite. It holds the
	// password: never log or show it (use Display).
	URL string
	// Display names the database without secrets, for logs and replies.
	Display string
	// NodeID is the configured node id ("" means derive one); Lease the
	// node lease length. PostgreSQL only.
	NodeID string
	Lease  time.Duration
}

// StorageSettings returns the effective storage: SWITCHBOARD_DATABASE_URL,
// then storage.url, select PostgreSQL unless storage.backend says
// "sqlite"; without either, SQLite.
func (c *Config) StorageSettings() StorageSettings {
	backend := norm(c.Storage.Backend)
	u := c.env.get(EnvDatabaseURL)
	if u == "" {
		u, _ = expandVars(strings.TrimSpace(c.Storage.URL), c.env)
	}
	if backend == BackendSQLite || (backend == "" && u == "") {
		return StorageSettings{Backend: BackendSQLite}
	}
	lease := time.Duration(cmp.Or(c.Storage.LeaseMs, DefaultLeaseMs)) * time.Millisecond
	node := cmp.Or(c.env.get(EnvNodeID), strings.TrimSpace(c.Storage.NodeID))
	return StorageSettings{Backend: BackendPostgres, URL: u, Display: DisplayDatabaseURL(u), NodeID: node, Lease: lease}
}

// DisplayDatabaseURL returns a PostgreSQL URL without its password and
// query (which may hold one too): postgres://user@host:port/db. Key=value
// connection strings are shown only by their host and database.
func DisplayDatabaseURL(raw string) string {
	raw = strings.TrimSpace(raw)
	if strings.HasPrefix(raw, "postgres://") || strings.HasPrefix(raw, "postgresql://") {
		u, err := url.Parse(raw)
		if err != nil || strings.ContainsAny(raw, " \t\r\n") {
			return "postgres (unparsable URL)"
		}
		host := u.Host
		if h := u.Query().Get("host"); host == "" && h != "" {
			host = "[" + h + "]" // a unix socket directory
		}
		user := ""
		if u.User != nil && u.User.Username() != "" {
			user = u.User.Username() + "@"
		}
		db := u.Path
		if strings.ContainsAny(db, "=&;") { // not a database name: hide it
			db = "/…"
		}
		return "postgres://" + user + host + db
	}
	var host, db string
	for _, f := range strings.Fields(raw) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "host":
			host = v
		case "dbname":
			db = v
		}
	}
	return "postgres host=" + host + " dbname=" + db
}

// storage checks the "storage" section.
func (k *checker) storage() {
	sp := path("storage")
	s := k.c.Storage
	k.enum(sp.key("backend"), s.Backend, BackendSQLite, BackendPostgres)
	if norm(s.Backend) == BackendPostgres && strings.TrimSpace(s.URL) == "" && k.c.env.get(EnvDatabaseURL) == "" {
		k.fail(sp.key("url"), "required when storage.backend is \"postgres\" (or set %s)", EnvDatabaseURL)
	}
	if u := strings.TrimSpace(s.URL); u != "" && !strings.HasPrefix(u, "${") &&
		!strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") && !strings.Contains(u, "=") {
		k.fail(sp.key("url"), "must be a postgres:// URL or key=value connection string")
	}
	if s.LeaseMs != 0 && (s.LeaseMs < minLeaseMs || s.LeaseMs > maxLeaseMs) {
		k.fail(sp.key("leaseMs"), "must be between %d and %d", minLeaseMs, maxLeaseMs)
	}
	if id := s.NodeID; id != "" && (len(id) > 128 || strings.ContainsAny(id, " \t\r\n")) {
		k.fail(sp.key("nodeId"), "must be at most 128 characters without spaces")
	}
}
