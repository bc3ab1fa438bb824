// Package dockertest is a fake Docker Engine for tests of the Docker
// sandbox backend. It serves, on a unix socket, the Engine API endpoints
// the Go SDK calls for it (ping, image inspect and pull, container create,
// attach, start, wait, kill and remove), records what it was asked, and
// "runs" each container's command with a Go function the test supplies.
// Only tests import it.
package dockertest

import (
	"bufio"
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
	"strings"
	"sync"
	"testing"

	"github.com/moby/moby/api/types/container"
)

// APIVersion is the Engine API version the fake announces.
const APIVersion = "1.47"

// Exec is one container's command as the fake runs it.
type Exec struct {
	Cmd        []string
	Env        []string
	WorkingDir string
	// Stdin is the attached input (end of file at once without it).
	Stdin io.Reader
	// Stdout and Stderr write frames of the multiplexed stream.
	Stdout, Stderr io.Writer
	// Killed is closed when the container is killed.
	Killed <-chan struct{}
}

// Created is one container create request.
type Created struct {
	Name       string
	Config     *container.Config
	HostConfig *container.HostConfig
}

// Engine is a fake Docker Engine. Its exported fields are set before use;
// read what it recorded through its methods.
type Engine struct {
	// Host is the DOCKER_HOST value that reaches it ("unix://…").
	Host string
	// Run runs a container's command and returns its exit code; nil
	// prints nothing and exits 0.
	Run func(e *Exec) int
	// PullError, when set, fails every image pull with it.
	PullError string

	srv *httptest.Server

	mu         sync.Mutex
	images     map[string]bool
	pulls      []string
	created    []Created
	containers map[string]*fakeContainer
	killed     []string
	removed    []string
	paths      []string
	seq        int
}

type fakeContainer struct {
	id      string
	created Created
	conn    net.Conn
	br      *bufio.Reader
	stdin   bool

	killOnce sync.Once
	killC    chan struct{}
	attached chan struct{} // closed when attach connected
	exited   chan struct{}
	running  bool
	code     int
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
	e := &Engine{Host: "unix://" + sock, images: map[string]bool{}, containers: map[string]*fakeContainer{}}
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
		c.kill()
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

// Live returns how many containers exist (created and not removed).
func (e *Engine) Live() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.containers)
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
	case strings.HasPrefix(p, "/containers/"):
		id, op, _ := strings.Cut(strings.TrimPrefix(p, "/containers/"), "/")
		e.mu.Lock()
		c := e.containers[id]
		e.mu.Unlock()
		if c == nil {
			apiError(w, http.StatusNotFound, "No such container: "+id)
			return
		}
		switch {
		case r.Method == http.MethodPost && op == "attach":
			e.attach(w, r, c)
		case r.Method == http.MethodPost && op == "start":
			e.start(w, c)
		case r.Method == http.MethodPost && op == "wait":
			// As the daemon, answer the headers at once and the status
			// when the container stops.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			select {
			case <-c.exited:
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
			e.killed = append(e.killed, id)
			e.mu.Unlock()
			if !running {
				apiError(w, http.StatusConflict, "container "+id+" is not running")
				return
			}
			c.kill()
			w.WriteHeader(http.StatusNoContent)
		case r.Method == http.MethodDelete && op == "":
			c.kill()
			e.mu.Lock()
			delete(e.containers, id)
			e.removed = append(e.removed, id)
			e.mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		default:
			apiError(w, http.StatusNotFound, "page not found")
		}
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
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.images[normalizeRef(req.Config.Image)] {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]string{"message": "No such image: " + req.Config.Image})
		return
	}
	e.seq++
	id := fmt.Sprintf("%064x", e.seq)
	cr := Created{Name: r.URL.Query().Get("name"), Config: req.Config, HostConfig: req.HostConfig}
	e.created = append(e.created, cr)
	e.containers[id] = &fakeContainer{id: id, created: cr, killC: make(chan struct{}),
		attached: make(chan struct{}), exited: make(chan struct{})}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(container.CreateResponse{ID: id, Warnings: []string{}})
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
	_, _ = brw.WriteString("HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.multiplexed-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
	_ = brw.Flush()
}

func (e *Engine) start(w http.ResponseWriter, c *fakeContainer) {
	e.mu.Lock()
	c.running = true
	e.mu.Unlock()
	run := e.Run
	if run == nil {
		run = func(*Exec) int { return 0 }
	}
	go func() {
		var stdin io.Reader = strings.NewReader("")
		var out io.Writer = io.Discard
		var mu sync.Mutex
		var conn net.Conn
		select {
		case <-c.attached:
			if c.stdin {
				stdin = c.br
			}
			conn, out = c.conn, c.conn
		default:
		}
		ex := &Exec{
			Cmd: c.created.Config.Cmd, Env: c.created.Config.Env, WorkingDir: c.created.Config.WorkingDir,
			Stdin: stdin, Stdout: &frameWriter{w: out, mu: &mu, stream: 1}, Stderr: &frameWriter{w: out, mu: &mu, stream: 2},
			Killed: c.killC,
		}
		code := run(ex)
		select {
		case <-c.killC:
			code = 128 + 9
		default:
		}
		e.mu.Lock()
		c.running, c.code = false, code
		e.mu.Unlock()
		if conn != nil {
			_ = conn.Close()
		}
		close(c.exited)
	}()
	w.WriteHeader(http.StatusNoContent)
}

func (c *fakeContainer) kill() { c.killOnce.Do(func() { close(c.killC) }) }

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
