// Package archtest holds repository-wide checks of the package layout: which
// internal packages may import which, that every package documents what it
// owns, and that every exported identifier has a doc comment. It has tests
// only; nothing imports it.
//
// The rules are data: the tables below (leaves, importAllowLists,
// forbiddenStd, forbidden, docSays, fieldDocs) are the one place to change
// them. Packages do not carry their own copies of these checks.
package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/switchboardhq/switchboard"

// docScope lists the top-level directories whose packages must document
// every exported identifier.
var docScope = []string{"internal", "cmd", "bench"}

type pkgInfo struct {
	dir     string          // slash-separated, relative to the module root
	name    string          // from the package clause
	imports map[string]bool // non-test imports
	doc     string          // package doc comment text of all non-test files
	files   []*ast.File     // non-test files, parsed with comments
}

type repo struct {
	root string
	fset *token.FileSet
	pkgs map[string]*pkgInfo // by import path
}

// parseRepo parses every non-test Go file under the repository, once.
var parseRepo = sync.OnceValues(func() (*repo, error) {
	root, err := filepath.Abs("../..")
	if err != nil {
		return nil, err
	}
	r := &repo{root: root, fset: token.NewFileSet(), pkgs: map[string]*pkgInfo{}}
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(r.fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		ip := module
		if rel != "." {
			ip += "/" + rel
		}
		p := r.pkgs[ip]
		if p == nil {
			p = &pkgInfo{dir: rel, name: f.Name.Name, imports: map[string]bool{}}
			r.pkgs[ip] = p
		}
		p.files = append(p.files, f)
		if f.Doc != nil {
			p.doc += f.Doc.Text()
		}
		for _, im := range f.Imports {
			p.imports[strings.Trim(im.Path.Value, `"`)] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
})

func loadRepo(t *testing.T) *repo {
	t.Helper()
	r, err := parseRepo()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// loadPackages returns every package of the repository by import path.
func loadPackages(t *testing.T) map[string]*pkgInfo {
	t.Helper()
	return loadRepo(t).pkgs
}

// position formats pos as a path relative to the repository root.
func (r *repo) position(pos token.Pos) string {
	p := r.fset.Position(pos)
	if rel, err := filepath.Rel(r.root, p.Filename); err == nil {
		p.Filename = filepath.ToSlash(rel)
	}
	return p.String()
}

// pkg returns the package in dir (relative to the module root), failing the
// test when a rule table names a package that does not exist.
func pkg(t *testing.T, pkgs map[string]*pkgInfo, dir string) *pkgInfo {
	t.Helper()
	p, ok := pkgs[module+"/"+dir]
	if !ok {
		t.Errorf("rule table names %s, which is not a package; update the table", dir)
	}
	return p
}

func TestEveryPackageHasDoc(t *testing.T) {
	pkgs := loadPackages(t)
	for _, ip := range sortedKeys(pkgs) {
		p := pkgs[ip]
		if strings.TrimSpace(p.doc) == "" {
			t.Errorf("%s has no package doc comment", ip)
			continue
		}
		// A command is documented as "Command <name> ...", a library
		// package as "Package <name> ...".
		want := "Package " + p.name + " "
		if p.name == "main" {
			want = "Command " + path.Base(p.dir) + " "
		}
		if doc := normSpace(p.doc); !strings.HasPrefix(doc, want) {
			t.Errorf("%s: package doc should start %q, got %q", ip, want, excerpt(doc))
		}
	}
}

// docSays lists, for packages whose doc is held to a wording, the prefix the
// package doc must start with and phrases it must contain: what the package
// owns and who may import it. Whitespace is normalised before matching.
var docSays = map[string]struct {
	prefix   string
	contains []string
}{
	"internal/config":          {"Package config owns ", []string{"may be imported by"}},
	"internal/gateway":         {"Package gateway owns ", []string{"Only the daemon imports this package"}},
	"internal/gateway/wire":    {"Package wire owns ", []string{"import it"}},
	"internal/interop":         {"Package interop owns ", []string{"Test-only", "import"}},
	"internal/policy":          {"Package policy owns ", []string{"may import it"}},
	"internal/store/sqlite":    {"Package sqlite owns ", nil},
	"internal/store/storetest": {"Package storetest owns ", nil},

	// The PostgreSQL backend and its test harness.
	"internal/store/postgres":        {"Package postgres owns ", []string{"Only the daemon"}},
	"internal/store/postgres/pgtest": {"Package pgtest owns ", []string{"Test-only"}},
	"internal/store/pgmigrate":       {"Package pgmigrate owns ", []string{"Only the daemon imports it"}},
}

func TestPackageDocWording(t *testing.T) {
	pkgs := loadPackages(t)
	for _, dir := range sortedKeys(docSays) {
		p := pkg(t, pkgs, dir)
		if p == nil {
			continue
		}
		rule, doc := docSays[dir], normSpace(p.doc)
		if !strings.HasPrefix(doc, rule.prefix) {
			t.Errorf("%s: package doc should start %q, got %q", dir, rule.prefix, excerpt(doc))
		}
		for _, want := range rule.contains {
			if !strings.Contains(doc, want) {
				t.Errorf("%s: package doc does not say %q (what it owns, who may import it)", dir, want)
			}
		}
	}
}

// TestExportedIdentifiersDocumented checks that every exported top-level
// identifier in the packages under docScope has a doc comment: funcs,
// methods on exported receiver types, types, consts and vars. A doc comment
// on the enclosing type, const or var group counts, and so does a trailing
// line comment on a const or var. Struct fields are checked only in the
// packages listed in fieldDocs.
func TestExportedIdentifiersDocumented(t *testing.T) {
	r := loadRepo(t)
	for _, ip := range sortedKeys(r.pkgs) {
		p := r.pkgs[ip]
		if !inDocScope(p.dir) {
			continue
		}
		for _, f := range p.files {
			for _, decl := range f.Decls {
				for _, u := range undocumented(decl) {
					t.Errorf("%s: exported %s has no doc comment", r.position(u.pos), u.what)
				}
			}
		}
	}
}

// fieldDocs lists packages that must also document every exported field of
// their exported struct types. A field without a comment of its own may
// share the doc of the run of fields it ends ("// A and B are …\nA string\nB
// string"); a blank line or a trailing comment ends a run.
var fieldDocs = []string{
	"internal/policy",
}

func TestExportedFieldsDocumented(t *testing.T) {
	r := loadRepo(t)
	for _, dir := range fieldDocs {
		p := pkg(t, r.pkgs, dir)
		if p == nil {
			continue
		}
		for _, f := range p.files {
			for _, decl := range f.Decls {
				d, ok := decl.(*ast.GenDecl)
				if !ok {
					continue
				}
				for _, spec := range d.Specs {
					s, ok := spec.(*ast.TypeSpec)
					if !ok || !s.Name.IsExported() {
						continue
					}
					st, ok := s.Type.(*ast.StructType)
					if !ok {
						continue
					}
					for _, fld := range st.Fields.List {
						for _, n := range fld.Names {
							if n.IsExported() && !hasDoc(fld.Doc) && !hasDoc(fld.Comment) && !r.sharesDoc(st, fld) {
								t.Errorf("%s: exported field %s.%s has no doc comment", r.position(n.Pos()), s.Name, n)
							}
						}
					}
				}
			}
		}
	}
}

type finding struct {
	pos  token.Pos
	what string
}

// undocumented returns the exported identifiers declared by decl that lack
// a doc comment.
func undocumented(decl ast.Decl) []finding {
	var out []finding
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() || hasDoc(d.Doc) {
			break
		}
		if d.Recv == nil {
			out = append(out, finding{d.Pos(), "func " + d.Name.Name})
		} else if recv := recvType(d.Recv); recv != nil && recv.IsExported() {
			out = append(out, finding{d.Pos(), "method " + recv.Name + "." + d.Name.Name})
		}
	case *ast.GenDecl:
		if hasDoc(d.Doc) {
			break
		}
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				if s.Name.IsExported() && !hasDoc(s.Doc) {
					out = append(out, finding{s.Pos(), "type " + s.Name.Name})
				}
			case *ast.ValueSpec:
				if hasDoc(s.Doc) || hasDoc(s.Comment) {
					continue
				}
				for _, n := range s.Names {
					if n.IsExported() {
						out = append(out, finding{n.Pos(), d.Tok.String() + " " + n.Name})
					}
				}
			}
		}
	}
	return out
}

// recvType returns the name of a method's receiver type, looking through
// pointers and type parameters.
func recvType(recv *ast.FieldList) *ast.Ident {
	if recv == nil || len(recv.List) == 0 {
		return nil
	}
	typ := recv.List[0].Type
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
		case *ast.ParenExpr:
			typ = x.X
		case *ast.IndexExpr:
			typ = x.X
		case *ast.IndexListExpr:
			typ = x.X
		case *ast.Ident:
			return x
		default:
			return nil
		}
	}
}

// sharesDoc reports whether field f continues a run of fields, on
// consecutive lines, that starts with a documented one and so shares its
// comment. A field with a trailing comment of its own ends the run.
func (r *repo) sharesDoc(st *ast.StructType, f *ast.Field) bool {
	i := slices.Index(st.Fields.List, f)
	if i <= 0 {
		return false
	}
	prev := st.Fields.List[i-1]
	if prev.Comment != nil || r.fset.Position(prev.End()).Line+1 != r.fset.Position(f.Pos()).Line {
		return false
	}
	return hasDoc(prev.Doc) || r.sharesDoc(st, prev)
}

// hasDoc reports whether cg has text beyond directives such as //go:embed.
func hasDoc(cg *ast.CommentGroup) bool {
	return cg != nil && strings.TrimSpace(cg.Text()) != ""
}

func inDocScope(dir string) bool {
	for _, top := range docScope {
		if dir == top || strings.HasPrefix(dir, top+"/") {
			return true
		}
	}
	return false
}

// leaves may import only the standard library plus the listed packages;
// they never import their users.
var leaves = map[string][]string{
	"internal/sessionkey":   nil,
	"internal/transcript":   {"internal/jsonenc"},
	"internal/jsonenc":      nil,
	"internal/workers":      nil,
	"internal/lazy":         nil,
	"internal/fsstamp":      nil,
	"internal/cronsched":    {"github.com/netresearch/go-cron"},
	"internal/logfile":      nil,
	"internal/statedir":     {"golang.org/x/sys/unix", "golang.org/x/sys/windows"},
	"internal/provider":     nil,
	"internal/tools":        nil,
	"internal/gateway/wire": {"internal/jsonenc"},
	"internal/a2a/wire":     nil,
	"internal/policy":       {"internal/sessionkey"},
	"internal/sanitize":     {"internal/transcript"},
	"internal/compaction":   {"internal/provider", "internal/policy"}, // policy: the slash-command syntax (SplitCommand)
	"internal/store":        {"internal/transcript", "internal/sessionkey", "github.com/google/uuid"},
	"internal/safeerr":      nil,
	// telemetry: the OpenTelemetry SDK, nothing of ours. Its OTLP exporter
	// is its own: the upstream one links in gRPC.
	"internal/telemetry": {
		"go.opentelemetry.io/otel/attribute",
		"go.opentelemetry.io/otel/codes",
		"go.opentelemetry.io/otel/sdk/resource",
		"go.opentelemetry.io/otel/sdk/trace",
		"go.opentelemetry.io/otel/trace",
	},
	"internal/spend": nil,
	// skills: SKILL.md discovery, gating and the prompt catalog; files only.
	"internal/skills":     {"github.com/titanous/json5", "go.yaml.in/yaml/v3", "internal/fsstamp"},
	"internal/eventhooks": nil,
	// tokenize: OpenAI's tokenizers, nothing of ours.
	"internal/tokenize": {"github.com/tiktoken-go/tokenizer"},
	"internal/ctxmap":   {"golang.org/x/image/font", "golang.org/x/image/font/basicfont", "golang.org/x/image/math/fixed"},
	"internal/media":    {"internal/provider"},
	// config reads the file; turning it into policy values is settings'.
	"internal/config": {"internal/sessionkey", "github.com/titanous/json5"},
	"internal/outbox": {"internal/safeerr", "internal/store", "internal/stackstart"},
	// stackstart: grows a goroutine's stack before its work; imports nothing.
	"internal/stackstart": nil,
	// channel: routing, access gates and splitting for chat channels, pure.
	"internal/channel": nil,
	// Test support: nothing from Switchboard, so any package's tests may use it.
	"internal/interop": {"github.com/dlclark/regexp2", "github.com/santhosh-tekuri/jsonschema/v6"},
}

// likeStd are leaves of ours that every allow list admits, as it admits
// the standard library: they import nothing but it.
var likeStd = []string{"internal/lazy"}

func TestLeafImports(t *testing.T) {
	checkAllowLists(t, leaves, "leaves use the standard library")
}

// importAllowLists are packages that are not leaves but still have a closed
// list of non-standard imports, with the same meaning as leaves.
var importAllowLists = map[string][]string{
	// a2a: the A2A channel server; runs and task storage come through its
	// own interfaces.
	"internal/a2a": {"github.com/google/uuid", "internal/a2a/wire"},
	// automation: webhook actions and cron jobs through admission.
	"internal/automation": {
		"github.com/google/uuid",
		"internal/admission", "internal/agent", "internal/cron", "internal/hooks", "internal/sessionkey", "internal/settings", "internal/store", "internal/transcript",
	},
	// a2a/bridge: the A2A server's turns through admission, its tasks in
	// the store.
	"internal/a2a/bridge": {
		"github.com/google/uuid",
		"internal/a2a", "internal/a2a/wire", "internal/admission", "internal/agent", "internal/settings", "internal/store", "internal/tools",
	},
	// a2a/remote: sessions_send's sends to remote peers, durable through
	// the outbox; late replies posted through a consumer-side interface.
	"internal/a2a/remote": {
		"github.com/google/uuid",
		"internal/a2a/outbound", "internal/a2a/wire", "internal/agent", "internal/outbox", "internal/policy",
		"internal/settings", "internal/store", "internal/tools/sessions", "internal/transcript",
	},
	// a2a/outbound: the A2A client sessions_send uses for remote peers.
	"internal/a2a/outbound": {"github.com/google/uuid", "internal/a2a/wire"},
	// httpapi: the HTTP front doors. Contracts and leaves only; the gateway
	// is reached through its own small interfaces, never imported.
	"internal/httpapi": {
		"github.com/google/uuid",
		"internal/admission",
		"internal/agent",
		"internal/media",
		"internal/policy",
		"internal/provider",
		"internal/sessionkey",
		"internal/settings",
		"internal/store",
		"internal/toolinvoke",
		"internal/transcript",
	},
	// channel/irc: the IRC connector; the gateway is reached through
	// channel.Deliverer, never imported.
	"internal/channel/irc": {"golang.org/x/time/rate", "internal/channel"},
	// channel/telegram: the Telegram connector, over the Bot API library;
	// the gateway is reached through channel.Deliverer, never imported.
	"internal/channel/telegram": {"github.com/go-telegram-bot-api/telegram-bot-api/v5", "internal/channel"},
	// channel/hub: the chat channel connectors joined to admission, the
	// runner's events and the outbox; the gateway is never imported.
	"internal/channel/hub": {
		"github.com/google/uuid",
		"internal/admission", "internal/agent", "internal/channel", "internal/channel/irc", "internal/channel/telegram",
		"internal/gateway/wire", "internal/outbox", "internal/policy", "internal/settings", "internal/store",
		"internal/transcript",
	},
	// channel/telegram/tgfake: the fake Bot API server, test support.
	"internal/channel/telegram/tgfake": nil,
	// webui: static assets and their handler; the page talks to the
	// gateway over its public protocol only.
	"internal/webui": nil,
	// metrics: the Prometheus text format over the runner's events; live
	// readings come through funcs, so no gateway or store import.
	"internal/metrics": {
		"internal/agent",
		"internal/store",
	},
	// toolinvoke: direct tool invocation over the tools contract and the
	// pure policy; no runner, store or transport.
	"internal/toolinvoke": {
		"internal/policy",
		"internal/sessionkey",
		"internal/tools",
	},
	// gateway: its wire package, the leaves and contracts it builds on, and
	// the WebSocket and UUID modules. Nothing that imports gateway (daemon,
	// cli) and no concrete backend or provider.
	"internal/gateway": {
		"github.com/coder/websocket",
		"github.com/google/uuid",
		"golang.org/x/sys/unix", // system.info's disk figures
		"internal/admission",
		"internal/agent",
		"internal/approval",
		"internal/compaction",
		"internal/cron",
		"internal/ctxmap",
		"internal/gateway/wire",
		"internal/jsonenc",
		"internal/logfile",
		"internal/media",
		"internal/policy",
		"internal/provider",
		"internal/safeerr",
		"internal/sanitize",
		"internal/sessionkey",
		"internal/settings",
		"internal/skills",
		"internal/stackstart",
		"internal/store",
		"internal/subagent",
		"internal/toolinvoke",
		"internal/tools",
		"internal/transcript",
		"internal/workers",
	},
	// The run-time core: what each layer may build on. The session tools
	// sit below the runner (agent imports tools), so tools/sessions must not
	// import agent or anything above it; agent-to-agent flows live in relay,
	// which implements the tools' Messenger.
	"internal/agent": {
		"github.com/google/uuid",
		"internal/compaction", "internal/policy", "internal/provider", "internal/spend", "internal/stackstart", "internal/store", "internal/telemetry", "internal/tokenize", "internal/tools", "internal/transcript",
		"internal/workers",
	},
	// admission: the one step between the doors and the runner: the
	// runner's input, the policy rules, the store contract, key parsing,
	// and the guards' budgets and agent chains; no door, no gateway.
	"internal/admission": {
		"github.com/google/uuid",
		"internal/agent", "internal/compaction", "internal/policy", "internal/sessionkey", "internal/spend", "internal/store", "internal/tools",
	},
	"internal/settings": {"internal/config", "internal/policy", "internal/sandbox", "internal/sessionkey", "internal/skills", "internal/spend"},
	"internal/tools/sessions": {
		"github.com/google/uuid",
		"internal/policy", "internal/sanitize", "internal/sessionkey", "internal/settings", "internal/spend",
		"internal/store", "internal/tools", "internal/transcript",
	},
	// The workspace tools build on the tool contract alone.
	"internal/tools/files": {"internal/tools"},
	"internal/tools/shell": {"internal/tools"},
	"internal/tools/web":   {"golang.org/x/net/html", "golang.org/x/net/html/atom", "internal/tools"},
	// The sandbox backends are a leaf: bwrap, the seccomp filter (the
	// BPF instruction encoder and the syscall numbers), and the Docker
	// backend with its own small Engine API client (the SDK's packages
	// cost ~1.5 ms and 0.5 MB of init work in every start).
	"internal/sandbox": {"github.com/Microsoft/go-winio", "github.com/docker/go-units", "golang.org/x/net/bpf", "golang.org/x/sys/unix"},
	// The fake Docker Engine speaks the Engine API's types only.
	"internal/sandbox/dockertest": {"github.com/moby/moby/api/types/container"},
	"internal/relay": {
		"internal/admission", "internal/agent", "internal/outbox", "internal/policy", "internal/sanitize", "internal/sessionkey",
		"internal/store", "internal/telemetry", "internal/tools", "internal/tools/sessions", "internal/transcript",
	},
	"internal/subagent": {
		"github.com/google/uuid",
		"internal/admission", "internal/agent", "internal/attachments", "internal/outbox", "internal/policy",
		"internal/safeerr", "internal/sanitize", "internal/sessionkey", "internal/settings", "internal/spend", "internal/store", "internal/telemetry", "internal/tools",
		"internal/transcript",
	},
	// A node of several on one database: the runner it coordinates and the
	// PostgreSQL backend it coordinates through, nothing else (and the
	// transcript types its events carry, which it writes in its relay
	// frames).
	"internal/cluster": {"github.com/google/uuid", "internal/agent", "internal/store", "internal/store/postgres", "internal/transcript"},
	// The PostgreSQL backend: the store contract and pgx, nothing else.
	"internal/store/postgres": {
		"github.com/google/uuid",
		"github.com/jackc/pgx/v5",
		"github.com/jackc/pgx/v5/pgconn",
		"github.com/jackc/pgx/v5/pgxpool",
		"internal/store",
		"internal/store/sqlstore",
		"internal/transcript",
	},
	"internal/store/postgres/pgtest": {"github.com/jackc/pgx/v5"},
	// The statements and row scanning both SQL backends share: the store
	// contract, no driver.
	"internal/store/sqlstore": {"internal/store", "internal/transcript"},
	// migrate: both backends, pgx and the SQLite driver, nothing else.
	"internal/store/pgmigrate": {
		"github.com/jackc/pgx/v5",
		"internal/store",
		"internal/store/postgres",
		"internal/store/sqlite",
		"modernc.org/sqlite",
	},
	// approval: exec approval policy, broker, files and the exec gate, on
	// the tools contract.
	"internal/approval": {"github.com/google/uuid", "internal/tools"},
	// approval/service: exec approvals as the gateway runs them; the
	// gateway is reached through its own small interface, never imported.
	"internal/approval/service": {"internal/approval", "internal/gateway/wire", "internal/settings", "internal/store", "internal/transcript"},
	// mcp: the MCP server and stdio proxy, on the tools contract (jsonrpc
	// for errors with MCP's own codes).
	"internal/mcp": {
		"github.com/modelcontextprotocol/go-sdk/jsonrpc",
		"github.com/modelcontextprotocol/go-sdk/mcp",
		"internal/tools",
	},
	// mcpclient: configured MCP servers' tools as agent tools.
	"internal/mcpclient": {
		"github.com/modelcontextprotocol/go-sdk/mcp",
		"internal/policy",
		"internal/settings",
		"internal/tools",
	},
}

func TestImportAllowLists(t *testing.T) {
	checkAllowLists(t, importAllowLists, "not on its allow list")
}

// checkAllowLists checks that each package in table imports only the
// standard library and its listed packages (module packages relative to the
// module root, others by full path).
func checkAllowLists(t *testing.T, table map[string][]string, why string) {
	t.Helper()
	pkgs := loadPackages(t)
	for _, dir := range sortedKeys(table) {
		p := pkg(t, pkgs, dir)
		if p == nil {
			continue
		}
		allowed := table[dir]
		for _, im := range sortedKeys(p.imports) {
			if slices.Contains(allowed, im) {
				continue
			}
			if !strings.HasPrefix(im, module+"/") {
				if strings.Contains(strings.SplitN(im, "/", 2)[0], ".") {
					t.Errorf("%s imports third-party %s; %s (allowed: %v)", dir, im, why, allowed)
				}
				continue
			}
			rel := strings.TrimPrefix(im, module+"/")
			if !slices.Contains(allowed, rel) && !slices.Contains(likeStd, rel) {
				t.Errorf("%s imports %s (allowed: %v)", dir, rel, allowed)
			}
		}
	}
}

// forbiddenStd lists standard-library packages a package must not import.
var forbiddenStd = map[string]struct {
	why     string
	imports []string
}{
	"internal/policy": {"policy does no I/O and reads no clock", []string{"os", "net", "net/http", "io/fs", "log", "log/slog", "time"}},
	// runtime/metrics builds its table of every metric in each process's
	// init; runtime.MemStats has the few figures /metrics shows.
	"internal/metrics": {"runtime/metrics costs init work in every start", []string{"runtime/metrics"}},
	"internal/procs":   {"runtime/metrics costs init work in every start (the workers' wait serves)", []string{"runtime/metrics"}},
}

func TestForbiddenStdImports(t *testing.T) {
	pkgs := loadPackages(t)
	for _, dir := range sortedKeys(forbiddenStd) {
		p := pkg(t, pkgs, dir)
		if p == nil {
			continue
		}
		rule := forbiddenStd[dir]
		for _, im := range rule.imports {
			if p.imports[im] {
				t.Errorf("%s imports %q: %s", dir, im, rule.why)
			}
		}
	}
}

// forbidden lists importer → imported edges that must not exist.
var forbidden = []struct{ from, to string }{
	{"internal/", "internal/daemon"}, // only cmd wires the daemon
	{"internal/", "internal/cli"},
	{"internal/", "internal/fakellm"},                 // test support only
	{"internal/", "internal/interop"},                 // test support only
	{"internal/", "internal/channel/telegram/tgfake"}, // test support only
	{"internal/agent", "internal/gateway"},
	{"internal/store", "internal/agent"},

	// Test support only.
	{"internal/", "internal/store/postgres/pgtest"},
}

func TestForbiddenEdges(t *testing.T) {
	pkgs := loadPackages(t)
	var bad []string
	for ip, p := range pkgs {
		from := strings.TrimPrefix(ip, module+"/")
		for im := range p.imports {
			to := strings.TrimPrefix(im, module+"/")
			for _, f := range forbidden {
				if strings.HasPrefix(from, f.from) && (to == f.to || strings.HasPrefix(to, f.to+"/")) && from != f.to && !strings.HasPrefix(from, f.to+"/") {
					bad = append(bad, from+" → "+to)
				}
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("forbidden import %s", b)
	}
}

func normSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

func excerpt(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// doors are the packages that start agent work for the outside (or for
// other sessions). They hand it to the admission step — commands, send
// policy, queue and cap decided once — and never reach the runner's
// enqueue themselves: they declare no interface with Submit or Enqueue
// taking an agent.Input, and name no agent.Runner (so, with Go's typing,
// they cannot call its Submit). startsWork marks the doors that must import
// internal/admission (the others reach it through one that does: the MCP
// server and sessions_send through the session tools' messenger).
var doors = []struct {
	dir        string
	startsWork bool
}{
	{"internal/gateway", true},
	{"internal/httpapi", true},
	{"internal/relay", true},
	{"internal/subagent", true},
	{"internal/tools/sessions", false},
	{"internal/mcp", false},
	{"internal/hooks", false},
	{"internal/a2a", false},
	{"internal/a2a/bridge", true},
	{"internal/automation", true},
	{"internal/channel", false},
	{"internal/channel/hub", true},
	{"internal/cron", false},
}

// enqueueCallers are the only packages whose code calls a method named
// Submit or Enqueue: the runner itself, admission, and cron (whose Submit
// is the job starter the daemon wires to admission). In particular the
// daemon, which builds the runner, starts no work itself.
var enqueueCallers = []string{"internal/agent", "internal/admission", "internal/cron"}

func TestDoorsGoThroughAdmission(t *testing.T) {
	r := loadRepo(t)
	for _, d := range doors {
		p := pkg(t, r.pkgs, d.dir)
		if p == nil {
			continue
		}
		if d.startsWork && !p.imports[module+"/internal/admission"] {
			t.Errorf("%s starts work but does not import internal/admission", d.dir)
		}
		for _, f := range p.files {
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					if x, ok := n.X.(*ast.Ident); ok && x.Name == "agent" && n.Sel.Name == "Runner" {
						t.Errorf("%s: door package names agent.Runner; start work through internal/admission", r.position(n.Pos()))
					}
				case *ast.InterfaceType:
					for _, m := range n.Methods.List {
						ft, ok := m.Type.(*ast.FuncType)
						if !ok || len(m.Names) == 0 || (m.Names[0].Name != "Submit" && m.Names[0].Name != "Enqueue") {
							continue
						}
						for _, prm := range ft.Params.List {
							if sel, ok := prm.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Input" {
								t.Errorf("%s: door package declares %s(agent.Input); start work through internal/admission", r.position(m.Pos()), m.Names[0].Name)
							}
						}
					}
				}
				return true
			})
		}
	}
	for ip, p := range r.pkgs {
		dir := strings.TrimPrefix(ip, module+"/")
		if slices.Contains(enqueueCallers, dir) {
			continue
		}
		for _, f := range p.files {
			ast.Inspect(f, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					if sel, ok := c.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Submit" || sel.Sel.Name == "Enqueue") {
						t.Errorf("%s: %s calls %s; only %v may (doors go through internal/admission)", r.position(c.Pos()), dir, sel.Sel.Name, enqueueCallers)
					}
				}
				return true
			})
		}
	}
}

// configReaders are the files outside internal/settings (and
// internal/config itself) whose code may import internal/config: loader
// call sites that must hold a *config.Config, by file, with the reason.
// None does today: settings.Load is every command's loader and serve's
// start-up applies its flags through settings (WithBind,
// WithGeneratedToken). Every component takes the typed values settings
// resolves, so config and settings are one layer. Tests may use config
// anywhere (config.Parse builds their fixtures).
var configReaders = map[string]string{}

func TestOnlySettingsReadsConfig(t *testing.T) {
	r := loadRepo(t)
	const cfgPkg = module + "/internal/config"
	for ip, p := range r.pkgs {
		if ip == cfgPkg || ip == module+"/internal/settings" || !p.imports[cfgPkg] {
			continue
		}
		for _, f := range p.files {
			rel, _ := filepath.Rel(r.root, r.fset.Position(f.Package).Filename)
			if _, ok := configReaders[filepath.ToSlash(rel)]; ok {
				continue
			}
			for _, im := range f.Imports {
				if strings.Trim(im.Path.Value, `"`) == cfgPkg {
					t.Errorf("%s imports internal/config; take the values internal/settings resolves (only settings, and the loader call sites in configReaders %v, may read *config.Config)",
						r.position(im.Pos()), sortedKeys(configReaders))
				}
			}
		}
	}
	for _, file := range sortedKeys(configReaders) {
		if _, err := os.Stat(filepath.Join(r.root, file)); err != nil {
			t.Errorf("configReaders names %s, which does not exist; update the table", file)
		}
	}
}

// initWorkExempt are packages under internal/ outside the gateway's
// binary (test fakes), which may compile at init what they use.
var initWorkExempt = []string{"internal/sandbox/dockertest"}

// TestNoRegexpCompiledAtInit keeps package init free of regexp
// compilation: every process (each CLI command too) would pay for it
// before main, used or not. Compile on first use (sync.OnceValue).
func TestNoRegexpCompiledAtInit(t *testing.T) {
	r := loadRepo(t)
	for _, ip := range sortedKeys(r.pkgs) {
		p := r.pkgs[ip]
		inBinary := strings.HasPrefix(p.dir, "internal/") || strings.HasPrefix(p.dir, "cmd/")
		if !inBinary || slices.Contains(initWorkExempt, p.dir) {
			continue
		}
		for _, f := range p.files {
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.VAR {
					continue
				}
				ast.Inspect(gd, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.FuncLit:
						return false // runs when called, not at init
					case *ast.CallExpr:
						if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
							if x, ok := sel.X.(*ast.Ident); ok && x.Name == "regexp" && strings.Contains(sel.Sel.Name, "Compile") {
								t.Errorf("%s: regexp.%s at package init; compile it on first use", r.position(n.Pos()), sel.Sel.Name)
							}
						}
					}
					return true
				})
			}
		}
	}
}
