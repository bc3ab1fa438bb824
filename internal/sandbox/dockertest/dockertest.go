// Package dockertest is a fake Docker Engine for tests of the Docker
// sandbox backend. It serves, on a unix socket, the Engine API endpoints
// the Go SDK calls for it (ping, image inspect and pull, container create,
// list, attach, start, wait, kill, rename and remove, exec create, start
// and inspect), records what it was asked, and "runs" each container's
// command and each exec with a Go function the test supplies. A scope
// container (label dev.switchboard.sandbox=scope) idles until it is
// killed, as its keep-alive command does; an exec whose script kills by
// environment marker (grep -qx 'NAME=value') kills the execs of its
// container that carry that marker, as the script does in /proc. Only
// tests import it.
package dockertest

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
)

// APIVersion is the Engine API version the fake announces.
const APIVersion = "1.47"

// Exec is one container's command, or one exec, as the fake runs it.
type Exec struct {
	// ContainerID is the container it runs in.
	ContainerID string
	// ExecID is the exec's id, "" for a container's own command.
	ExecID     string
	Cmd        []string
	Env        []string
	WorkingDir string
	User       string
	// Stdin is the attached input (end of file at once without it).
	Stdin io.Reader
	// Stdout and Stderr write frames of the multiplexed stream.
	Stdout, Stderr io.Writer
	// Killed is closed when the container, or the exec's processes, are
	// killed.
	Killed <-chan struct{}
}

// Created is one container create request.
type Created struct {
	Name       string
	Config     *container.Config
	HostConfig *container.HostConfig
}

// ExecRecord is one exec create request, with the container it targets.
type ExecRecord struct {
	ID          string
	ContainerID string
	Cmd         []string
	Env         []string
	User        string
	WorkingDir  string
	AttachStdin bool
}

// Engine is a fake Docker Engine. Its exported fields are set before use;
// read what it recorded through its methods.
type Engine struct {
	// Host is the DOCKER_HOST value that reaches it ("unix://…").
	Host string
	// Run runs a container's command or an exec and returns its exit
	// code; nil prints nothing and exits 0.
	Run func(e *Exec) int
	// PullError, when set, fails every image pull with it.
	PullError string
	// ExecStartDelay is how long an exec other than a kill script takes
	// to start after its attach was answered (a busy daemon).
	ExecStartDelay time.Duration

	srv *httptest.Server

	mu         sync.Mutex
	images     map[string]bool
	pulls      []string
	created    []Created
	containers map[string]*fakeContainer
	execs      map[string]*fakeExec
	execLog    []ExecRecord
	markers    []string
	killed     []string
	removed    []string
	started    []string
	paths      []string
	seq        int
}

type fakeContainer struct {
	id        string
	name      string
	created   Created
	createdAt time.Time
	conn      net.Conn
	br        *bufio.Reader
	stdin     bool
	attached  chan struct{} // closed when attach connected

	// The current run, under Engine.mu.
	running  bool
	runs     int
	killC    chan struct{}
	killOnce *sync.Once
	exited   chan struct{}
	code     int
}

type fakeExec struct {
	id       string
	c        *fakeContainer
	req      container.ExecCreateRequest
	running  bool
	started  bool // start was asked for
	pid      int  // set once the process runs
	done     bool
	code     int
	killC    chan struct{}
	killOnce sync.Once
}

// New starts a fake engine holding images, stopped at the end of the
// test.
func New(t testing.TB, images ...string) *Engine {
	t.Helper()
	dir, err := os.MkdirTemp("", "dkt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{Host: "unix://" + sock, images: map[string]bool{}, containers: map[string]*fakeContainer{}, execs: map[string]*fakeExec{}}
	for _, im := range images {
		e.images[normalizeRef(im)] = true
	}
	e.srv = httptest.NewUnstartedServer(http.HandlerFunc(e.serve))
	e.srv.Listener = ln
	e.srv.Start()
	t.Cleanup(e.Close)
	return e
}

// Close stops the engine, ending every container.
func (e *Engine) Close() {
	e.mu.Lock()
	for _, c := range e.containers {
		e.killLocked(c)
	}
	e.mu.Unlock()
	e.srv.CloseClientConnections()
	e.srv.Close()
}

// Created returns the containers created, in order.
func (e *Engine) Created() []Created {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Created(nil), e.created...)
}

// Pulls returns the images pulled ("name:tag").
func (e *Engine) Pulls() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.pulls...)
}

// Killed returns the ids of the containers killed.
func (e *Engine) Killed() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.killed...)
}

// Removed returns the ids of the containers removed.
func (e *Engine) Removed() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.removed...)
}

// Started returns the ids of the containers started, once per start.
func (e *Engine) Started() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.started...)
}

// Execs returns the exec create requests, in order.
func (e *Engine) Execs() []ExecRecord {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]ExecRecord(nil), e.execLog...)
}

// KillMarkers returns the markers ("NAME=value") of the kill scripts
// exec'd, in order.
func (e *Engine) KillMarkers() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.markers...)
}

// Live returns how many containers exist (created and not removed).
func (e *Engine) Live() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.containers)
}

// Container returns the id and name of the live container named name or
// with id name, and whether it runs.
func (e *Engine) Container(name string) (id, cname string, running, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.lookup(name)
	if c == nil {
		return "", "", false, false
	}
	return c.id, c.name, c.running, true
}

// Names returns the names of the live containers, sorted.
func (e *Engine) Names() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, c := range e.containers {
		out = append(out, c.name)
	}
	slices.Sort(out)
	return out
}

// Stop ends container id's command and its execs, as a daemon or host
// restart does; the container stays, stopped.
func (e *Engine) Stop(id string) {
	e.mu.Lock()
	c := e.containers[id]
	var exited chan struct{}
	if c != nil && c.running {
		e.killLocked(c)
		exited = c.exited
	}
	e.mu.Unlock()
	if exited != nil {
		<-exited
	}
}

// Age makes container id look created d earlier.
func (e *Engine) Age(id string, d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c := e.containers[id]; c != nil {
		c.createdAt = c.createdAt.Add(-d)
	}
}

// Requests returns "METHOD /path" of every request, version prefix
// stripped.
func (e *Engine) Requests() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.paths...)
}

// normalizeRef turns "name[:tag]" into "docker.io/library/name:tag" as the
// daemon does.
func normalizeRef(ref string) string {
	name, tag := ref, "latest"
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		name, tag = ref[:i], ref[i+1:]
	}
	if !strings.Contains(name, "/") {
		name = "library/" + name
	}
	if first, _, _ := strings.Cut(name, "/"); !strings.ContainsAny(first, ".:") && first != "localhost" {
		name = "docker.io/" + name
	}
	return name + ":" + tag
}

var versionPrefix = regexp.MustCompile(`^/v[0-9]+\.[0-9]+`)

func (e *Engine) serve(w http.ResponseWriter, r *http.Request) {
	p := versionPrefix.ReplaceAllString(r.URL.Path, "")
	e.mu.Lock()
	e.paths = append(e.paths, r.Method+" "+p)
	e.mu.Unlock()
	w.Header().Set("Api-Version", APIVersion)
	w.Header().Set("Ostype", "linux")
	switch {
	case p == "/_ping":
		_, _ = io.WriteString(w, "OK")
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/images/") && strings.HasSuffix(p, "/json"):
		e.inspectImage(w, strings.TrimSuffix(strings.TrimPrefix(p, "/images/"), "/json"))
	case r.Method == http.MethodPost && p == "/images/create":
		e.pull(w, r)
	case r.Method == http.MethodPost && p == "/containers/create":
		e.create(w, r)
	case r.Method == http.MethodGet && p == "/containers/json":
		e.list(w, r)
	case strings.HasPrefix(p, "/containers/"):
		id, op, _ := strings.Cut(strings.TrimPrefix(p, "/containers/"), "/")
		e.mu.Lock()
		c := e.lookup(id)
		e.mu.Unlock()
		if c == nil {
			apiError(w, http.StatusNotFound, "No such container: "+id)
			return
		}
		e.serveContainer(w, r, c, op)
	case strings.HasPrefix(p, "/exec/"):
		id, op, _ := strings.Cut(strings.TrimPrefix(p, "/exec/"), "/")
		e.mu.Lock()
		x := e.execs[id]
		e.mu.Unlock()
		if x == nil {
			apiError(w, http.StatusNotFound, "No such exec instance: "+id)
			return
		}
		switch {
		case r.Method == http.MethodPost && op == "start":
			e.startExec(w, r, x)
		case r.Method == http.MethodGet && op == "json":
			e.inspectExec(w, x)
		case r.Method == http.MethodPost && op == "resize":
			w.WriteHeader(http.StatusOK)
		default:
			apiError(w, http.StatusNotFound, "page not found")
		}
	default:
		apiError(w, http.StatusNotFound, "page not found")
	}
}

// lookup finds a live container by id or name. e.mu is held.
func (e *Engine) lookup(idOrName string) *fakeContainer {
	if c := e.containers[idOrName]; c != nil {
		return c
	}
	for _, c := range e.containers {
		if c.name == strings.TrimPrefix(idOrName, "/") && c.name != "" {
			return c
		}
	}
	return nil
}

func (e *Engine) serveContainer(w http.ResponseWriter, r *http.Request, c *fakeContainer, op string) {
	switch {
	case r.Method == http.MethodPost && op == "attach":
		e.attach(w, r, c)
	case r.Method == http.MethodPost && op == "start":
		e.start(w, c)
	case r.Method == http.MethodPost && op == "wait":
		e.mu.Lock()
		exited := c.exited
		e.mu.Unlock()
		// As the daemon, answer the headers at once and the status
		// when the container stops.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-exited:
		case <-r.Context().Done():
			return
		}
		e.mu.Lock()
		code := c.code
		e.mu.Unlock()
		_ = json.NewEncoder(w).Encode(container.WaitResponse{StatusCode: int64(code)})
	case r.Method == http.MethodPost && op == "kill":
		e.mu.Lock()
		running := c.running
		e.killed = append(e.killed, c.id)
		if running {
			e.killLocked(c)
		}
		e.mu.Unlock()
		if !running {
			apiError(w, http.StatusConflict, "container "+c.id+" is not running")
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost && op == "exec":
		e.createExec(w, r, c)
	case r.Method == http.MethodPost && op == "rename":
		name := strings.TrimPrefix(r.URL.Query().Get("name"), "/")
		e.mu.Lock()
		defer e.mu.Unlock()
		if o := e.lookup(name); o != nil && o != c {
			apiError(w, http.StatusConflict, "the name "+name+" is already in use")
			return
		}
		c.name = name
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodDelete && op == "":
		e.mu.Lock()
		e.killLocked(c)
		delete(e.containers, c.id)
		e.removed = append(e.removed, c.id)
		e.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		apiError(w, http.StatusNotFound, "page not found")
	}
}

func apiError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

func (e *Engine) inspectImage(w http.ResponseWriter, name string) {
	e.mu.Lock()
	ok := e.images[normalizeRef(name)]
	e.mu.Unlock()
	if !ok {
		apiError(w, http.StatusNotFound, "No such image: "+name)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"Id": "sha256:0123456789abcdef", "RepoTags": []string{name}})
}

func (e *Engine) pull(w http.ResponseWriter, r *http.Request) {
	ref := r.URL.Query().Get("fromImage") + ":" + r.URL.Query().Get("tag")
	e.mu.Lock()
	e.pulls = append(e.pulls, ref)
	if e.PullError == "" {
		e.images[normalizeRef(ref)] = true
	}
	e.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	_ = enc.Encode(map[string]string{"status": "Pulling from " + ref})
	if e.PullError != "" {
		_ = enc.Encode(map[string]any{"errorDetail": map[string]any{"message": e.PullError}, "error": e.PullError})
		return
	}
	_ = enc.Encode(map[string]string{"status": "Status: Downloaded newer image for " + ref})
}

func (e *Engine) create(w http.ResponseWriter, r *http.Request) {
	var req container.CreateRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		apiError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.Config == nil {
		apiError(w, http.StatusBadRequest, "no config")
		return
	}
	name := r.URL.Query().Get("name")
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.images[normalizeRef(req.Config.Image)] {
		apiError(w, http.StatusNotFound, "No such image: "+req.Config.Image)
		return
	}
	if name != "" && e.lookup(name) != nil {
		apiError(w, http.StatusConflict, "Conflict. The container name \"/"+name+"\" is already in use")
		return
	}
	e.seq++
	id := fmt.Sprintf("%064x", e.seq)
	cr := Created{Name: name, Config: req.Config, HostConfig: req.HostConfig}
	e.created = append(e.created, cr)
	e.containers[id] = &fakeContainer{id: id, name: name, created: cr, createdAt: time.Now(),
		attached: make(chan struct{}), exited: make(chan struct{})}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(container.CreateResponse{ID: id, Warnings: []string{}})
}

// list answers GET /containers/json, honouring all and label filters
// ("key" or "key=value", all of which must match).
func (e *Engine) list(w http.ResponseWriter, r *http.Request) {
	var filters map[string]map[string]bool
	if f := r.URL.Query().Get("filters"); f != "" {
		if err := json.Unmarshal([]byte(f), &filters); err != nil {
			apiError(w, http.StatusBadRequest, "filters: "+err.Error())
			return
		}
	}
	all := r.URL.Query().Get("all") == "1"
	e.mu.Lock()
	var out []container.Summary
	for _, c := range e.containers {
		if (!all && !c.running) || !matchLabels(c.created.Config.Labels, filters["label"]) {
			continue
		}
		state := container.StateCreated
		switch {
		case c.running:
			state = container.StateRunning
		case c.runs > 0:
			state = container.StateExited
		}
		out = append(out, container.Summary{
			ID: c.id, Names: []string{"/" + c.name}, Image: c.created.Config.Image,
			Labels: c.created.Config.Labels, State: state, Created: c.createdAt.Unix(),
		})
	}
	e.mu.Unlock()
	slices.SortFunc(out, func(a, b container.Summary) int { return strings.Compare(a.ID, b.ID) })
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func matchLabels(labels map[string]string, want map[string]bool) bool {
	for f := range want {
		k, v, hasV := strings.Cut(f, "=")
		got, ok := labels[k]
		if !ok || (hasV && got != v) {
			return false
		}
	}
	return true
}

func (e *Engine) attach(w http.ResponseWriter, r *http.Request, c *fakeContainer) {
	conn, brw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	// The container is attached before the client hears so, so that a
	// start right after the upgrade finds the stream.
	c.conn, c.br, c.stdin = conn, brw.Reader, r.URL.Query().Get("stdin") == "1"
	close(c.attached)
	upgraded(brw)
}

// upgraded answers a hijacked request with the switch to the raw
// multiplexed stream.
func upgraded(brw *bufio.ReadWriter) {
	_, _ = brw.WriteString("HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.multiplexed-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
	_ = brw.Flush()
}

// isScope reports whether c is a scope container, whose keep-alive
// command idles until killed.
func (c *fakeContainer) isScope() bool {
	return c.created.Config.Labels["dev.switchboard.sandbox"] == "scope"
}

func (e *Engine) start(w http.ResponseWriter, c *fakeContainer) {
	e.mu.Lock()
	if c.running {
		e.mu.Unlock()
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if c.runs > 0 {
		c.exited = make(chan struct{})
	}
	c.running, c.killC, c.killOnce = true, make(chan struct{}), &sync.Once{}
	c.runs++
	e.started = append(e.started, c.id)
	killC, exited := c.killC, c.exited
	first := c.runs == 1
	e.mu.Unlock()
	run := e.Run
	if run == nil || c.isScope() {
		run = func(x *Exec) int {
			if c.isScope() {
				<-x.Killed
				return 128 + 9
			}
			return 0
		}
	}
	go func() {
		var stdin io.Reader = strings.NewReader("")
		var out io.Writer = io.Discard
		var mu sync.Mutex
		var conn net.Conn
		if first {
			select {
			case <-c.attached:
				if c.stdin {
					stdin = c.br
				}
				conn, out = c.conn, c.conn
			default:
			}
		}
		ex := &Exec{
			ContainerID: c.id, Cmd: c.created.Config.Cmd, Env: c.created.Config.Env, WorkingDir: c.created.Config.WorkingDir,
			User:  c.created.Config.User,
			Stdin: stdin, Stdout: &frameWriter{w: out, mu: &mu, stream: 1}, Stderr: &frameWriter{w: out, mu: &mu, stream: 2},
			Killed: killC,
		}
		code := run(ex)
		select {
		case <-killC:
			code = 128 + 9
		default:
		}
		e.mu.Lock()
		c.running, c.code = false, code
		for _, x := range e.execs {
			if x.c == c {
				x.kill()
			}
		}
		e.mu.Unlock()
		if conn != nil {
			_ = conn.Close()
		}
		close(exited)
	}()
	w.WriteHeader(http.StatusNoContent)
}

// killLocked kills c's current run and its execs. e.mu is held.
func (e *Engine) killLocked(c *fakeContainer) {
	if c.killOnce != nil {
		c.killOnce.Do(func() { close(c.killC) })
	}
	for _, x := range e.execs {
		if x.c == c {
			x.kill()
		}
	}
}

func (x *fakeExec) kill() { x.killOnce.Do(func() { close(x.killC) }) }

func (e *Engine) createExec(w http.ResponseWriter, r *http.Request, c *fakeContainer) {
	var req container.ExecCreateRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		apiError(w, http.StatusBadRequest, err.Error())
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !c.running {
		apiError(w, http.StatusConflict, "container "+c.id+" is not running")
		return
	}
	e.seq++
	id := fmt.Sprintf("e%063x", e.seq)
	e.execs[id] = &fakeExec{id: id, c: c, req: req, killC: make(chan struct{})}
	e.execLog = append(e.execLog, ExecRecord{ID: id, ContainerID: c.id, Cmd: req.Cmd, Env: req.Env,
		User: req.User, WorkingDir: req.WorkingDir, AttachStdin: req.AttachStdin})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(container.ExecCreateResponse{ID: id})
}

// killMarkerRE finds the marker a kill script looks for.
var killMarkerRE = regexp.MustCompile(`grep -qx '([A-Za-z_][A-Za-z0-9_]*=[^'\s]+)'`)

func (e *Engine) startExec(w http.ResponseWriter, r *http.Request, x *fakeExec) {
	var req container.ExecStartRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	e.mu.Lock()
	if x.started {
		e.mu.Unlock()
		apiError(w, http.StatusConflict, "exec "+x.id+" has already started")
		return
	}
	if !x.c.running {
		e.mu.Unlock()
		apiError(w, http.StatusConflict, "container "+x.c.id+" is not running")
		return
	}
	x.started = true
	e.mu.Unlock()
	var conn net.Conn
	var out io.Writer = io.Discard
	var stdin io.Reader = strings.NewReader("")
	if req.Detach {
		w.WriteHeader(http.StatusOK)
	} else {
		c, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		upgraded(brw)
		conn, out = c, c
		if x.req.AttachStdin {
			stdin = brw.Reader
		}
	}
	var mu sync.Mutex
	cfg := x.c.created.Config
	ex := &Exec{
		ContainerID: x.c.id, ExecID: x.id, Cmd: x.req.Cmd,
		Env:        append(slices.Clone(cfg.Env), x.req.Env...),
		WorkingDir: cmp.Or(x.req.WorkingDir, cfg.WorkingDir), User: cmp.Or(x.req.User, cfg.User),
		Stdin: stdin, Stdout: &frameWriter{w: out, mu: &mu, stream: 1}, Stderr: &frameWriter{w: out, mu: &mu, stream: 2},
		Killed: x.killC,
	}
	go func() {
		if !killMarkerRE.MatchString(strings.Join(ex.Cmd, " ")) {
			time.Sleep(e.ExecStartDelay)
		}
		e.mu.Lock()
		x.running, x.pid = true, 1000+e.seq
		e.mu.Unlock()
		code := e.runExec(ex)
		select {
		case <-x.killC:
			code = 128 + 9
		default:
		}
		e.mu.Lock()
		x.running, x.done, x.code = false, true, code
		e.mu.Unlock()
		if conn != nil {
			_ = conn.Close()
		}
	}()
}

// runExec runs one exec: a kill script kills the execs carrying its
// marker, anything else goes to Run.
func (e *Engine) runExec(ex *Exec) int {
	if m := killMarkerRE.FindStringSubmatch(strings.Join(ex.Cmd, " ")); m != nil {
		e.mu.Lock()
		e.markers = append(e.markers, m[1])
		for _, o := range e.execs {
			if o.c.id == ex.ContainerID && o.id != ex.ExecID && o.running && slices.Contains(o.req.Env, m[1]) {
				o.kill()
			}
		}
		e.mu.Unlock()
		return 0
	}
	if e.Run == nil {
		return 0
	}
	return e.Run(ex)
}

func (e *Engine) inspectExec(w http.ResponseWriter, x *fakeExec) {
	e.mu.Lock()
	// As the daemon: no process id before the exec started, no exit
	// code before it ended.
	resp := container.ExecInspectResponse{ID: x.id, ContainerID: x.c.id, Running: x.running, Pid: x.pid}
	if x.done {
		code := x.code
		resp.ExitCode = &code
	}
	e.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// frameWriter writes one stream of the multiplexed attach protocol: an
// 8-byte header (stream, 3 zero bytes, big-endian size), then the data.
type frameWriter struct {
	w      io.Writer
	mu     *sync.Mutex
	stream byte
}

func (f *frameWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	hdr := make([]byte, 8)
	hdr[0] = f.stream
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(p)))
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.w.Write(append(hdr, p...)); err != nil {
		return 0, err
	}
	return len(p), nil
}
