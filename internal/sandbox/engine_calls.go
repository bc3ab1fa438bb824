package sandbox

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// The Engine API calls of the backend, each as documented for the
// endpoint it names.

// imageInspect asks GET /images/{name}/json whether the daemon has the
// image (a 404 when it does not).
func (e *engine) imageInspect(ctx context.Context, image string) error {
	if image == "" {
		return &apiError{status: http.StatusNotFound, msg: "No such image: "}
	}
	return e.call(ctx, http.MethodGet, "/images/"+image+"/json", nil, nil, nil)
}

// imagePull pulls image with POST /images/create and reads the progress
// stream to its end: an error message in it fails the pull.
func (e *engine) imagePull(ctx context.Context, image string) error {
	name, tag := pullRef(image)
	q := url.Values{"fromImage": {name}, "tag": {tag}}
	resp, err := e.send(ctx, http.MethodPost, e.path(ctx, "/images/create", q), nil)
	if err != nil {
		return err
	}
	defer drain(resp)
	if resp.StatusCode >= http.StatusBadRequest {
		return responseError(resp)
	}
	return pullStreamError(resp.Body)
}

// pullStreamError reads a pull's JSON progress messages to the end and
// returns the first error one carries (errorDetail, or the older error
// field).
func pullStreamError(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m struct {
			Error       string `json:"error"`
			ErrorDetail *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read the pull's progress: %w", err)
		}
		switch {
		case m.ErrorDetail != nil && m.ErrorDetail.Message != "":
			return &apiError{status: m.ErrorDetail.Code, msg: m.ErrorDetail.Message}
		case m.Error != "":
			return &apiError{msg: m.Error}
		}
	}
}

// pullRef splits an image reference into the fromImage and tag of a
// pull, as the SDK does: the name fully qualified (docker.io/library/
// for a Docker Hub official image), the tag "latest" when none is
// given, and a digest, when given, instead of the tag.
func pullRef(ref string) (name, tag string) {
	name, tag = ref, "latest"
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		name, tag = ref[:i], ref[i+1:]
		if j := strings.LastIndexByte(name, ':'); j > strings.LastIndexByte(name, '/') {
			name = name[:j]
		}
	} else if j := strings.LastIndexByte(ref, ':'); j > strings.LastIndexByte(ref, '/') {
		name, tag = ref[:j], ref[j+1:]
	}
	domain, rest, ok := strings.Cut(name, "/")
	if !ok || !strings.ContainsAny(domain, ".:") && domain != "localhost" && strings.ToLower(domain) == domain {
		domain, rest = "docker.io", name
	}
	if domain == "index.docker.io" {
		domain = "docker.io"
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	return domain + "/" + rest, tag
}

// normalizeCaps writes capabilities as the SDK sends them: upper case
// with the CAP_ prefix (but ALL), sorted, each once.
func normalizeCaps(caps []string) []string {
	out := make([]string, 0, len(caps))
	for _, c := range caps {
		c = strings.ToUpper(c)
		if c != "ALL" && !strings.HasPrefix(c, "CAP_") {
			c = "CAP_" + c
		}
		out = append(out, c)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// containerCreate creates a container named name and returns its id.
func (e *engine) containerCreate(ctx context.Context, name string, cfg *containerConfig, hc *hostConfig) (string, error) {
	if cfg.Image == "" {
		return "", errors.New("config.Image is required")
	}
	if hc != nil {
		n := *hc
		n.CapDrop = normalizeCaps(hc.CapDrop)
		hc = &n
	}
	var q url.Values
	if name != "" {
		q = url.Values{"name": {name}}
	}
	var out struct {
		ID string `json:"Id"`
	}
	if err := e.call(ctx, http.MethodPost, "/containers/create", q, createRequest{cfg, hc}, &out); err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", errors.New("the daemon's answer to the create has no container id")
	}
	return out.ID, nil
}

// containerAttach attaches to container id's output (and input when
// stdin) before it starts.
func (e *engine) containerAttach(ctx context.Context, id string, stdin bool) (*hijacked, error) {
	q := url.Values{"stream": {"1"}, "stdout": {"1"}, "stderr": {"1"}}
	if stdin {
		q.Set("stdin", "1")
	}
	return e.hijack(ctx, "/containers/"+id+"/attach", q, nil)
}

// containerStart starts container id (a 304 when it already runs is no
// error).
func (e *engine) containerStart(ctx context.Context, id string) error {
	return e.call(ctx, http.MethodPost, "/containers/"+id+"/start", nil, nil, nil)
}

// waitMessageMax bounds the text kept of a wait answer that is not
// JSON.
const waitMessageMax = 2 << 10

// containerWait waits, until ctx ends, for container id to stop
// (condition not-running) and returns its exit status. The request is
// sent before it returns; the answer comes on the channel.
func (e *engine) containerWait(ctx context.Context, id string) <-chan waitResult {
	ch := make(chan waitResult, 1)
	q := url.Values{"condition": {"not-running"}}
	resp, err := e.send(ctx, http.MethodPost, e.path(ctx, "/containers/"+id+"/wait", q), nil)
	if err == nil && resp.StatusCode >= http.StatusBadRequest {
		err = responseError(resp)
		drain(resp)
	}
	if err != nil {
		ch <- waitResult{err: err}
		return ch
	}
	go func() {
		defer drain(resp)
		body, err := io.ReadAll(io.LimitReader(resp.Body, waitMessageMax))
		if err != nil {
			ch <- waitResult{err: err}
			return
		}
		var w waitResponse
		if err := json.Unmarshal(body, &w); err != nil {
			ch <- waitResult{err: errors.New(strings.TrimSpace(string(body)))}
			return
		}
		ch <- waitResult{code: w.StatusCode, err: waitError(w)}
	}()
	return ch
}

// waitResult is the end of a containerWait.
type waitResult struct {
	code int64
	err  error
}

// waitError is the error a wait answer carries, nil without one.
func waitError(w waitResponse) error {
	if w.Error == nil || w.Error.Message == "" {
		return nil
	}
	return errors.New(w.Error.Message)
}

// containerKill sends signal to container id's main process.
func (e *engine) containerKill(ctx context.Context, id, signal string) error {
	return e.call(ctx, http.MethodPost, "/containers/"+id+"/kill", url.Values{"signal": {signal}}, nil, nil)
}

// containerRemove removes container id with its anonymous volumes,
// killing it first when it runs.
func (e *engine) containerRemove(ctx context.Context, id string) error {
	return e.call(ctx, http.MethodDelete, "/containers/"+id, url.Values{"force": {"1"}, "v": {"1"}}, nil, nil)
}

// containerRename renames container id.
func (e *engine) containerRename(ctx context.Context, id, name string) error {
	return e.call(ctx, http.MethodPost, "/containers/"+id+"/rename", url.Values{"name": {name}}, nil, nil)
}

// containerList lists the containers, running or not, carrying every
// label ("key=value") given.
func (e *engine) containerList(ctx context.Context, labels ...string) ([]containerSummary, error) {
	f := map[string]map[string]bool{"label": {}}
	for _, l := range labels {
		f["label"][l] = true
	}
	b, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	var out []containerSummary
	err = e.call(ctx, http.MethodGet, "/containers/json", url.Values{"all": {"1"}, "filters": {string(b)}}, nil, &out)
	return out, err
}

// execCreate creates an exec in container id and returns its id.
func (e *engine) execCreate(ctx context.Context, id string, cfg execConfig) (string, error) {
	var out struct {
		ID string `json:"Id"`
	}
	if err := e.call(ctx, http.MethodPost, "/containers/"+id+"/exec", nil, cfg, &out); err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", errors.New("the daemon's answer to the exec create has no exec id")
	}
	return out.ID, nil
}

// execStart starts exec id attached (Detach false, no tty).
func (e *engine) execStart(ctx context.Context, id string) (*hijacked, error) {
	return e.hijack(ctx, "/exec/"+id+"/start", nil, struct{ Detach, Tty bool }{})
}

// execInspect returns the state of exec id.
func (e *engine) execInspect(ctx context.Context, id string) (execInspect, error) {
	var out execInspect
	err := e.call(ctx, http.MethodGet, "/exec/"+id+"/json", nil, nil, &out)
	return out, err
}

// Stream numbers of the multiplexed stream.
const (
	streamStdin  = 0
	streamStdout = 1
	streamStderr = 2
	streamSystem = 3
)

// systemErrMax bounds the text kept of an error frame.
const systemErrMax = 64 << 10

// demux copies the multiplexed output stream of a container or exec
// without a tty to stdout and stderr. Each frame is an 8-byte header
// (stream number, three zero bytes, payload length as a big-endian
// uint32) and its payload; stdin frames count as stdout, and a frame of
// stream 3 is the daemon's error, returned. The stream ends cleanly at
// a frame boundary; one cut inside a frame is io.ErrUnexpectedEOF.
func demux(stdout, stderr io.Writer, r io.Reader) error {
	var h [8]byte
	for {
		if _, err := io.ReadFull(r, h[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		n := int64(binary.BigEndian.Uint32(h[4:]))
		var w io.Writer
		switch h[0] {
		case streamStdin, streamStdout:
			w = stdout
		case streamStderr:
			w = stderr
		case streamSystem:
			msg, err := io.ReadAll(io.LimitReader(r, min(n, systemErrMax)))
			if err != nil {
				return err
			}
			return fmt.Errorf("error from daemon in stream: %s", msg)
		default:
			return fmt.Errorf("unrecognized stream: %d", h[0])
		}
		if _, err := io.CopyN(w, r, n); err != nil {
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
}
