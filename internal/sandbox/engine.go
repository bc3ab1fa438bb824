package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The Engine API versions this client speaks: it asks the daemon's
// /_ping for its version and uses the lower of the two, as the Docker
// SDK does (the SDK this client replaced used the same bounds).
const (
	engineMaxVersion = "1.56"
	engineMinVersion = "1.40"
)

// defaultDockerHost is the daemon's socket when neither the
// configuration nor DOCKER_HOST names one.
const defaultDockerHost = "unix:///var/run/docker.sock"

// engineHostName is the Host header of requests over a unix socket, the
// SDK's placeholder.
const engineHostName = "api.moby.localhost"

// engine is a client of the few Docker Engine API endpoints the backend
// uses: HTTP over the daemon's unix socket, Windows named pipe or TCP (TLS from
// DOCKER_CERT_PATH and DOCKER_TLS_VERIFY), with the API version
// negotiated through /_ping unless DOCKER_API_VERSION fixes it. Safe for
// concurrent use.
type engine struct {
	host   string // as configured, for messages
	scheme string // http or https
	addr   string // the URL host
	base   string // path prefix of tcp://host/prefix
	tls    *tls.Config
	dial   func(ctx context.Context) (net.Conn, error)
	hc     *http.Client
	tr     *http.Transport

	mu      sync.Mutex
	version string // negotiated (or fixed); "" until then
	fixed   bool
}

// newEngine returns a client of the daemon at host ("" means
// DOCKER_HOST, else the local socket), configured from the environment
// as the docker CLI is.
func newEngine(host string) (*engine, error) {
	if host == "" {
		host = os.Getenv("DOCKER_HOST")
	}
	if host == "" {
		host = defaultDockerHost
	}
	proto, addr, ok := strings.Cut(host, "://")
	if !ok || addr == "" {
		return nil, fmt.Errorf("unable to parse docker host %q", host)
	}
	e := &engine{host: host, scheme: "http"}
	var d net.Dialer
	switch proto {
	case "unix":
		e.addr = engineHostName
		e.dial = func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "unix", addr) }
	case "tcp":
		u, err := url.Parse("tcp://" + addr)
		if err != nil {
			return nil, fmt.Errorf("docker host %q: %w", host, err)
		}
		e.addr, e.base = u.Host, strings.TrimSuffix(u.Path, "/")
		e.dial = func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", u.Host) }
	case "npipe":
		e.addr = engineHostName
		e.dial = func(ctx context.Context) (net.Conn, error) { return dialPipe(ctx, addr) }
	default:
		return nil, fmt.Errorf("docker host %q: protocol %q is not supported (use unix://, tcp:// or, on Windows, npipe://)", host, proto)
	}
	if dir := os.Getenv("DOCKER_CERT_PATH"); dir != "" {
		cfg, err := tlsFromDir(dir, os.Getenv("DOCKER_TLS_VERIFY") == "")
		if err != nil {
			return nil, fmt.Errorf("configure TLS from DOCKER_CERT_PATH=%s: %w", dir, err)
		}
		e.tls, e.scheme = cfg, "https"
	}
	if v := os.Getenv("DOCKER_API_VERSION"); v != "" {
		v = strings.TrimPrefix(v, "v")
		if _, _, ok := parseVersion(v); !ok {
			return nil, fmt.Errorf("invalid DOCKER_API_VERSION %q (want major.minor, such as 1.47)", v)
		}
		e.version, e.fixed = v, true
	}
	e.tr = &http.Transport{
		DialContext:     func(ctx context.Context, _, _ string) (net.Conn, error) { return e.dial(ctx) },
		TLSClientConfig: e.tls,
		MaxIdleConns:    6,
		IdleConnTimeout: 30 * time.Second,
	}
	if proto == "tcp" {
		e.tr.Proxy = http.ProxyFromEnvironment
	}
	e.hc = &http.Client{Transport: e.tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return e, nil
}

// tlsFromDir is the client TLS of the docker CLI: the daemon's CA
// (ca.pem) and the client's certificate (cert.pem, key.pem) of dir, all
// required, verifying the daemon unless insecure.
func tlsFromDir(dir string, insecure bool) (*tls.Config, error) {
	ca, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("ca.pem holds no certificate")
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	if err != nil {
		return nil, fmt.Errorf("client certificate: %w", err)
	}
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		RootCAs:            pool,
		Certificates:       []tls.Certificate{cert},
		InsecureSkipVerify: insecure, //nolint:gosec // DOCKER_TLS_VERIFY unset asks for it, as with the docker CLI
	}, nil
}

// close releases idle connections.
func (e *engine) close() { e.tr.CloseIdleConnections() }

// apiError is an answer of the daemon with an error status.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return "Error response from daemon: " + e.msg }

// isNotFound reports whether err is the daemon's 404.
func isNotFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.status == http.StatusNotFound
}

// isConflict reports whether err is the daemon's 409 (for example, an
// exec in a container that does not run).
func isConflict(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.status == http.StatusConflict
}

// errorBodyMax bounds the error body read.
const errorBodyMax = 1 << 20

// responseError returns the error of a response with status 400 or
// more: the daemon's {"message": …}, or its text.
func responseError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyMax))
	msg := strings.TrimSpace(string(body))
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		var er struct {
			Message string `json:"message"`
		}
		if err := json.Unmarshal(body, &er); err == nil {
			msg = strings.TrimSpace(er.Message)
		}
	}
	if msg == "" {
		msg = fmt.Sprintf("%d %s (no message)", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	return &apiError{status: resp.StatusCode, msg: msg}
}

// ping asks /_ping (HEAD, then GET as the SDK does) and, unless the
// version is fixed or negotiated, settles on the lower of the daemon's
// API version and engineMaxVersion.
func (e *engine) ping(ctx context.Context) error {
	var resp *http.Response
	var err error
	for _, m := range []string{http.MethodHead, http.MethodGet} {
		resp, err = e.send(ctx, m, e.base+"/_ping", nil)
		if err == nil && resp.StatusCode == http.StatusOK {
			break
		}
		if err == nil && m == http.MethodGet {
			err = responseError(resp)
		}
		if resp != nil {
			drain(resp)
		}
	}
	if err != nil {
		return err
	}
	drain(resp)
	return e.negotiate(resp.Header.Get("Api-Version"))
}

// negotiate settles the API version on the daemon's v (see ping).
func (e *engine) negotiate(v string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fixed || e.version != "" {
		return nil
	}
	if v == "" {
		e.version = engineMaxVersion
		return nil
	}
	v = strings.TrimPrefix(v, "v")
	if _, _, ok := parseVersion(v); !ok {
		return fmt.Errorf("daemon announced an invalid API version %q", v)
	}
	if versionLess(v, engineMinVersion) {
		return fmt.Errorf("API version %s is not supported by this client: the minimum supported API version is %s", v, engineMinVersion)
	}
	e.version = engineMaxVersion
	if versionLess(v, engineMaxVersion) {
		e.version = v
	}
	return nil
}

// parseVersion splits "major.minor".
func parseVersion(v string) (major, minor int, ok bool) {
	a, b, ok := strings.Cut(v, ".")
	if !ok {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(a)
	minor, err2 := strconv.Atoi(b)
	return major, minor, err1 == nil && err2 == nil && major >= 0 && minor >= 0
}

// versionLess compares two valid "major.minor" versions.
func versionLess(a, b string) bool {
	am, an, _ := parseVersion(a)
	bm, bn, _ := parseVersion(b)
	return am < bm || am == bm && an < bn
}

// path returns the versioned URL path of endpoint p with query q,
// negotiating the version first when it is not yet.
func (e *engine) path(ctx context.Context, p string, q url.Values) string {
	e.mu.Lock()
	v := e.version
	e.mu.Unlock()
	if v == "" {
		// As the SDK: a failed negotiation is tried again next time and
		// this request goes with the highest version.
		if e.ping(ctx) == nil {
			e.mu.Lock()
			v = e.version
			e.mu.Unlock()
		}
		if v == "" {
			v = engineMaxVersion
		}
	}
	u := url.URL{Path: e.base + "/v" + v + p, RawQuery: q.Encode()}
	return u.String()
}

// newRequest builds a request of target (path and query) with a JSON
// body when body is not nil.
func (e *engine) newRequest(ctx context.Context, method, target string, body any) (*http.Request, error) {
	var r io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.scheme+"://"+e.addr+target, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", "switchboard")
	return req, nil
}

// send sends one request and returns the response whatever its status.
func (e *engine) send(ctx context.Context, method, target string, body any) (*http.Response, error) {
	req, err := e.newRequest(ctx, method, target, body)
	if err != nil {
		return nil, err
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, fmt.Errorf("cannot connect to the Docker daemon at %s: %w", e.host, err)
	}
	return resp, nil
}

// call sends a request of endpoint p and decodes a 2xx answer's JSON
// into out (when not nil); an error status is an *apiError.
func (e *engine) call(ctx context.Context, method, p string, q url.Values, body, out any) error {
	resp, err := e.send(ctx, method, e.path(ctx, p, q), body)
	if err != nil {
		return err
	}
	defer drain(resp)
	if resp.StatusCode >= http.StatusBadRequest {
		return responseError(resp)
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("read the daemon's answer to %s %s: %w", method, p, err)
	}
	return nil
}

// drain reads a little of what is left of a body, so that its
// connection can be reused, and closes it.
func drain(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, 512)
	_ = resp.Body.Close()
}

// hijacked is the raw connection of an attach or exec start after the
// daemon switched protocols: reads return the multiplexed output,
// writes go to the command's input.
type hijacked struct {
	net.Conn
	r *bufio.Reader
}

func (h *hijacked) Read(p []byte) (int, error) { return h.r.Read(p) }

// CloseWrite ends the command's input, keeping its output open.
func (h *hijacked) CloseWrite() error {
	if cw, ok := h.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// hijack sends a POST of endpoint p on a connection of its own, asking
// to upgrade it to the raw stream ("Connection: Upgrade", "Upgrade:
// tcp"), and returns the connection once the daemon answered 101.
func (e *engine) hijack(ctx context.Context, p string, q url.Values, body any) (_ *hijacked, err error) {
	req, err := e.newRequest(ctx, http.MethodPost, e.path(ctx, p, q), body)
	if err != nil {
		return nil, err
	}
	if body == nil {
		req.Header.Set("Content-Type", "text/plain")
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "tcp")
	conn, err := e.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to the Docker daemon at %s: %w", e.host, err)
	}
	if e.tls != nil {
		cfg := e.tls.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(e.addr)
		}
		conn = tls.Client(conn, cfg)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer func() {
		if !stop() && err == nil {
			err = ctx.Err()
		}
		if err != nil {
			_ = conn.Close()
		}
	}()
	if err := req.Write(conn); err != nil {
		return nil, fmt.Errorf("send %s: %w", p, err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, fmt.Errorf("read the answer to %s: %w", p, err)
	}
	if resp.StatusCode >= http.StatusBadRequest {
		defer resp.Body.Close()
		return nil, responseError(resp)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("unable to upgrade to tcp, received %d", resp.StatusCode)
	}
	return &hijacked{Conn: conn, r: br}, nil
}
