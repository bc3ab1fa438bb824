package sandbox

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
)

// frame encodes one frame of the multiplexed stream.
func frame(stream byte, payload string) []byte {
	h := make([]byte, 8, 8+len(payload))
	h[0] = stream
	binary.BigEndian.PutUint32(h[4:], uint32(len(payload)))
	return append(h, payload...)
}

func TestDemux(t *testing.T) {
	cat := func(fs ...[]byte) []byte { return bytes.Join(fs, nil) }
	for _, tc := range []struct {
		name          string
		in            []byte
		stdout, error string
		stderr        string
	}{
		{name: "empty"},
		{name: "both streams", in: cat(frame(1, "out1 "), frame(2, "err"), frame(1, "out2")), stdout: "out1 out2", stderr: "err"},
		{name: "stdin frames count as stdout", in: frame(0, "in"), stdout: "in"},
		{name: "empty frame", in: cat(frame(1, ""), frame(1, "x")), stdout: "x"},
		{name: "daemon error ends the stream", in: cat(frame(1, "a"), frame(3, "boom"), frame(1, "b")), stdout: "a", error: "error from daemon in stream: boom"},
		{name: "unknown stream", in: frame(7, "x"), error: "unrecognized stream: 7"},
		{name: "cut header", in: frame(1, "abc")[:5], error: io.ErrUnexpectedEOF.Error()},
		{name: "cut payload", in: frame(1, "abcdef")[:11], stdout: "abc", error: io.ErrUnexpectedEOF.Error()},
		{name: "large frame", in: frame(2, strings.Repeat("z", 100_000)), stderr: strings.Repeat("z", 100_000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := demux(&out, &errb, iotest.HalfReader(bytes.NewReader(tc.in)))
			if got := errString(err); got != tc.error {
				t.Errorf("error %q, want %q", got, tc.error)
			}
			if out.String() != tc.stdout || errb.String() != tc.stderr {
				t.Errorf("stdout %q stderr %q, want %q %q", out.String(), errb.String(), tc.stdout, tc.stderr)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// FuzzDemux checks that frames cut from any input come back whole on
// their streams however the reader splits the bytes, and that demux of
// arbitrary bytes writes no more than it read.
func FuzzDemux(f *testing.F) {
	f.Add([]byte("hello\x02world"), uint8(3))
	f.Add([]byte{}, uint8(1))
	f.Add(frame(1, "x"), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		// Raw input: never more output than input.
		var raw bytes.Buffer
		_ = demux(&raw, &raw, bytes.NewReader(data))
		if raw.Len() > len(data) {
			t.Fatalf("demux wrote %d bytes of %d", raw.Len(), len(data))
		}
		// Frames: chunk data by cut, alternating streams by a chunk's
		// first byte.
		var stream, want [3]bytes.Buffer
		var enc bytes.Buffer
		size := int(cut%17) + 1
		for rest := data; len(rest) > 0; {
			n := min(size, len(rest))
			s := rest[0] % 3
			enc.Write(frame(s, string(rest[:n])))
			w := s
			if w == 0 {
				w = 1
			}
			want[w].Write(rest[:n])
			rest = rest[n:]
		}
		if err := demux(&stream[1], &stream[2], iotest.OneByteReader(bytes.NewReader(enc.Bytes()))); err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 2; i++ {
			if !bytes.Equal(stream[i].Bytes(), want[i].Bytes()) {
				t.Fatalf("stream %d: %q, want %q", i, stream[i].Bytes(), want[i].Bytes())
			}
		}
	})
}

func TestPullRef(t *testing.T) {
	for _, tc := range []struct{ ref, name, tag string }{
		{"openclaw-sandbox:bookworm-slim", "docker.io/library/openclaw-sandbox", "bookworm-slim"},
		{"ubuntu", "docker.io/library/ubuntu", "latest"},
		{"me/tool", "docker.io/me/tool", "latest"},
		{"index.docker.io/ubuntu:24.04", "docker.io/library/ubuntu", "24.04"},
		{"localhost/x", "localhost/x", "latest"},
		{"localhost:5000/team/img:1.2", "localhost:5000/team/img", "1.2"},
		{"ghcr.io/a/b@sha256:0123", "ghcr.io/a/b", "sha256:0123"},
		{"a/b:t@sha256:0123", "docker.io/a/b", "sha256:0123"},
		{"registry.example.com:443/x", "registry.example.com:443/x", "latest"},
	} {
		name, tag := pullRef(tc.ref)
		if name != tc.name || tag != tc.tag {
			t.Errorf("pullRef(%q) = %q %q, want %q %q", tc.ref, name, tag, tc.name, tc.tag)
		}
	}
}

func TestNegotiate(t *testing.T) {
	for _, tc := range []struct{ daemon, want, err string }{
		{"1.47", "1.47", ""},
		{"1.44", "1.44", ""},
		{"v1.45", "1.45", ""},
		{"1.99", engineMaxVersion, ""},
		{"2.0", engineMaxVersion, ""},
		{"", engineMaxVersion, ""},
		{"1.39", "", "not supported by this client"},
		{"1.x", "", "invalid API version"},
	} {
		e := &engine{}
		err := e.negotiate(tc.daemon)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || e.version != "" {
				t.Errorf("negotiate(%q) = %v, version %q; want error %q", tc.daemon, err, e.version, tc.err)
			}
			continue
		}
		if err != nil || e.version != tc.want {
			t.Errorf("negotiate(%q) = %v, version %q; want %q", tc.daemon, err, e.version, tc.want)
		}
	}
	// A version fixed by DOCKER_API_VERSION is kept.
	e := &engine{version: "1.41", fixed: true}
	if err := e.negotiate("1.47"); err != nil || e.version != "1.41" {
		t.Errorf("fixed version: %v %q", err, e.version)
	}
}

func TestResponseError(t *testing.T) {
	for _, tc := range []struct {
		status      int
		ctype, body string
		want        string
	}{
		{404, "application/json", `{"message":"No such container: abc"}` + "\n", "Error response from daemon: No such container: abc"},
		{409, "text/plain; charset=utf-8", "container is not running\n", "Error response from daemon: container is not running"},
		{500, "", "", "Error response from daemon: 500 Internal Server Error (no message)"},
	} {
		resp := &http.Response{StatusCode: tc.status, Header: http.Header{"Content-Type": {tc.ctype}}, Body: io.NopCloser(strings.NewReader(tc.body))}
		err := responseError(resp)
		if err.Error() != tc.want {
			t.Errorf("%d: %q, want %q", tc.status, err, tc.want)
		}
		if isNotFound(err) != (tc.status == 404) || isConflict(err) != (tc.status == 409) {
			t.Errorf("%d: isNotFound %v isConflict %v", tc.status, isNotFound(err), isConflict(err))
		}
	}
}

func TestPullStreamError(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"status":"Pulling from library/x"}` + "\n" + `{"status":"Digest: sha256:1"}`, ""},
		{`{"status":"a"}{"errorDetail":{"code":404,"message":"manifest unknown"},"error":"manifest unknown"}`, "Error response from daemon: manifest unknown"},
		{`{"error":"old style"}`, "Error response from daemon: old style"},
		{`{"status":`, "read the pull's progress: unexpected EOF"},
	} {
		if got := errString(pullStreamError(strings.NewReader(tc.in))); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestNewEngineHosts(t *testing.T) {
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("DOCKER_CERT_PATH", "")
	t.Setenv("DOCKER_API_VERSION", "")
	for _, tc := range []struct{ host, addr, base, err string }{
		{"", engineHostName, "", ""},
		{"unix:///run/user/1000/docker.sock", engineHostName, "", ""},
		{"tcp://10.0.0.2:2375", "10.0.0.2:2375", "", ""},
		{"tcp://10.0.0.2:2375/prefix/", "10.0.0.2:2375", "/prefix", ""},
		{"ssh://me@host", "", "", `protocol "ssh" is not supported`},
		{"npipe:////./pipe/docker_engine", engineHostName, "", ""},
		{"/var/run/docker.sock", "", "", "unable to parse docker host"},
	} {
		e, err := newEngine(tc.host)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want %q", tc.host, err, tc.err)
			}
			continue
		}
		if err != nil || e.addr != tc.addr || e.base != tc.base || e.scheme != "http" {
			t.Errorf("%q: %v, addr %q base %q scheme %q", tc.host, err, e.addr, e.base, e.scheme)
		}
	}
	t.Setenv("DOCKER_API_VERSION", "1.x")
	if _, err := newEngine("tcp://d:2376"); err == nil || !strings.Contains(err.Error(), "invalid DOCKER_API_VERSION") {
		t.Errorf("bad DOCKER_API_VERSION: %v", err)
	}
	t.Setenv("DOCKER_API_VERSION", "v1.41")
	dir := t.TempDir()
	t.Setenv("DOCKER_CERT_PATH", dir)
	t.Setenv("DOCKER_TLS_VERIFY", "1")
	if _, err := newEngine("tcp://d:2376"); err == nil || !strings.Contains(err.Error(), "DOCKER_CERT_PATH="+dir) {
		t.Errorf("missing certificates: %v", err)
	}
	writeCerts(t, dir)
	e, err := newEngine("tcp://d:2376")
	if err != nil || e.version != "1.41" || !e.fixed || e.scheme != "https" || e.tls.InsecureSkipVerify || len(e.tls.Certificates) != 1 || e.tls.RootCAs == nil {
		t.Fatalf("from env: %v %+v", err, e)
	}
	t.Setenv("DOCKER_TLS_VERIFY", "")
	if e, err := newEngine("tcp://d:2376"); err != nil || !e.tls.InsecureSkipVerify {
		t.Errorf("DOCKER_TLS_VERIFY unset: %v", err)
	}
}

// writeCerts writes a self-signed ca.pem and a cert.pem and key.pem of it
// to dir.
func writeCerts(t *testing.T, dir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "d"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	for name, b := range map[string][]byte{"ca.pem": certPEM, "cert.pem": certPEM, "key.pem": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// wireDaemon is an Engine API endpoint on a unix socket that answers
// with handler and records each request's first line and headers.
func wireDaemon(t *testing.T, handler http.HandlerFunc) *engine {
	t.Helper()
	dir, err := os.MkdirTemp("", "eng")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "d.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(handler)
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	t.Setenv("DOCKER_API_VERSION", "")
	t.Setenv("DOCKER_CERT_PATH", "")
	e, err := newEngine("unix://" + sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.close)
	return e
}

func TestEngineWire(t *testing.T) {
	var got []string
	e := wireDaemon(t, func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.RequestURI()+" host="+r.Host)
		switch {
		case r.URL.Path == "/_ping" && r.Method == http.MethodHead:
			w.WriteHeader(http.StatusMethodNotAllowed) // an old daemon: GET only
		case r.URL.Path == "/_ping":
			w.Header().Set("Api-Version", "1.44")
			_, _ = io.WriteString(w, "OK")
		case r.URL.Path == "/v1.44/exec/x1/start":
			body, _ := io.ReadAll(r.Body)
			got = append(got, "upgrade="+r.Header.Get("Connection")+"/"+r.Header.Get("Upgrade")+" type="+r.Header.Get("Content-Type")+" body="+string(body))
			conn, brw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			_, _ = brw.WriteString("HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.multiplexed-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
			_, _ = brw.Write(frame(1, "hi "))
			_ = brw.Flush()
			// Echo the input until it is closed, then end.
			in, _ := io.ReadAll(brw)
			_, _ = brw.Write(frame(2, string(in)))
			_ = brw.Flush()
		case r.URL.Path == "/v1.44/exec/gone/start":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"message":"No such exec instance: gone"}`)
		case r.URL.Path == "/v1.44/exec/plain/start":
			w.WriteHeader(http.StatusOK)
		case r.URL.Path == "/v1.44/containers/c1/wait":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, `{"StatusCode":137,"Error":null}`+"\n")
		case r.URL.Path == "/v1.44/containers/c2/wait":
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, `{"StatusCode":0,"Error":{"Message":"removal failed"}}`)
		case r.URL.Path == "/v1.44/containers/c3/wait":
			_, _ = io.WriteString(w, "not json")
		case r.URL.Path == "/v1.44/containers/json":
			got = append(got, "filters="+r.URL.Query().Get("filters"))
			_, _ = io.WriteString(w, `[{"Id":"c1","Names":["/n"],"Labels":{"a":"b"},"State":"exited","Created":1700000000}]`)
		default:
			http.NotFound(w, r)
		}
	})
	ctx := context.Background()
	if err := e.ping(ctx); err != nil || e.version != "1.44" {
		t.Fatalf("ping: %v, version %q", err, e.version)
	}
	h, err := e.execStart(ctx, "x1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Write([]byte("input")); err != nil {
		t.Fatal(err)
	}
	if err := h.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if err := demux(&out, &errb, h); err != nil {
		t.Fatal(err)
	}
	_ = h.Close()
	if out.String() != "hi " || errb.String() != "input" {
		t.Errorf("hijacked stream: stdout %q stderr %q", out.String(), errb.String())
	}
	if _, err := e.execStart(ctx, "gone"); !isNotFound(err) || !strings.Contains(err.Error(), "No such exec instance: gone") {
		t.Errorf("exec start of a missing exec: %v", err)
	}
	if _, err := e.execStart(ctx, "plain"); err == nil || !strings.Contains(err.Error(), "unable to upgrade to tcp, received 200") {
		t.Errorf("exec start without upgrade: %v", err)
	}
	for id, want := range map[string]waitResult{"c1": {code: 137}, "c2": {err: errors.New("removal failed")}, "c3": {err: errors.New("not json")}} {
		res := <-e.containerWait(ctx, id)
		if res.code != want.code || errString(res.err) != errString(want.err) {
			t.Errorf("wait %s: %+v, want %+v", id, res, want)
		}
	}
	list, err := e.containerList(ctx, "k=v")
	if err != nil || len(list) != 1 || list[0].ID != "c1" || list[0].Created != 1700000000 || list[0].State != "exited" || list[0].Labels["a"] != "b" {
		t.Errorf("list: %v %+v", err, list)
	}
	want := []string{
		"HEAD /_ping host=" + engineHostName,
		"GET /_ping host=" + engineHostName,
		"POST /v1.44/exec/x1/start host=" + engineHostName,
		`upgrade=Upgrade/tcp type=application/json body={"Detach":false,"Tty":false}`,
		"POST /v1.44/exec/gone/start host=" + engineHostName,
		"POST /v1.44/exec/plain/start host=" + engineHostName,
	}
	if len(got) < len(want) || strings.Join(got[:len(want)], "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant first:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if last := got[len(got)-1]; last != `filters={"label":{"k=v":true}}` {
		t.Errorf("list filters: %s", last)
	}
}

// TestCreateBodyIsTheAPIs checks the create request's JSON against the
// SDK's types, which the daemon (and the fake engine) decode it with:
// every field this backend sets arrives with its value.
func TestCreateBodyIsTheAPIs(t *testing.T) {
	init, pids := true, int64(64)
	body, err := json.Marshal(createRequest{
		&containerConfig{Image: "i", Cmd: []string{"c"}, Entrypoint: []string{}, Env: []string{"A=1"}, WorkingDir: "/w", User: "u",
			AttachStdin: true, AttachStdout: true, AttachStderr: true, OpenStdin: true, StdinOnce: true, Labels: map[string]string{"l": "v"}},
		&hostConfig{NetworkMode: "none", ReadonlyRootfs: true, CapDrop: []string{"ALL"}, SecurityOpt: []string{"no-new-privileges"}, Init: &init,
			Tmpfs: map[string]string{"/tmp": ""}, Binds: []string{"/a:/b"}, ExtraHosts: []string{"h:1.2.3.4"}, DNS: []string{"1.1.1.1"},
			Mounts: []mountSpec{{Type: mountBind, Source: "/s", Target: "/t", ReadOnly: true}}, Memory: 1, MemorySwap: 2, NanoCPUs: 3,
			PidsLimit: &pids, Ulimits: []ulimit{{Name: "nofile", Hard: 2, Soft: 1}},
			DeviceRequests: []deviceRequest{{Driver: "d", Count: -1, DeviceIDs: []string{"0"}, Capabilities: [][]string{{"gpu"}}, Options: map[string]string{"o": "1"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var got container.CreateRequest
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := container.CreateRequest{
		Config: &container.Config{Image: "i", Cmd: []string{"c"}, Entrypoint: []string{}, Env: []string{"A=1"}, WorkingDir: "/w", User: "u",
			AttachStdin: true, AttachStdout: true, AttachStderr: true, OpenStdin: true, StdinOnce: true, Labels: map[string]string{"l": "v"}},
		HostConfig: &container.HostConfig{NetworkMode: "none", ReadonlyRootfs: true, CapDrop: []string{"ALL"}, SecurityOpt: []string{"no-new-privileges"}, Init: &init,
			Tmpfs: map[string]string{"/tmp": ""}, Binds: []string{"/a:/b"}, ExtraHosts: []string{"h:1.2.3.4"}, DNS: []netip.Addr{netip.MustParseAddr("1.1.1.1")},
			Mounts: []mount.Mount{{Type: mount.TypeBind, Source: "/s", Target: "/t", ReadOnly: true}},
			Resources: container.Resources{Memory: 1, MemorySwap: 2, NanoCPUs: 3, PidsLimit: &pids, Ulimits: []*container.Ulimit{{Name: "nofile", Hard: 2, Soft: 1}},
				DeviceRequests: []container.DeviceRequest{{Driver: "d", Count: -1, DeviceIDs: []string{"0"}, Capabilities: [][]string{{"gpu"}}, Options: map[string]string{"o": "1"}}}}},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateComparable(netip.Addr{})); diff != "" {
		t.Errorf("create request as the daemon reads it (-want +got):\n%s", diff)
	}
	// The exec create body, likewise.
	body, _ = json.Marshal(execConfig{User: "u", AttachStdin: true, AttachStdout: true, AttachStderr: true, Env: []string{"E=1"}, WorkingDir: "/w", Cmd: []string{"c"}})
	dec = json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var ex container.ExecCreateRequest
	if err := dec.Decode(&ex); err != nil {
		t.Fatal(err)
	}
	wantEx := container.ExecCreateRequest{User: "u", AttachStdin: true, AttachStdout: true, AttachStderr: true, Env: []string{"E=1"}, WorkingDir: "/w", Cmd: []string{"c"}}
	if diff := cmp.Diff(wantEx, ex); diff != "" {
		t.Errorf("exec create request (-want +got):\n%s", diff)
	}
}

// TestEngineTLS: over tcp:// with DOCKER_CERT_PATH's TLS, calls and the
// hijacked exec stream both run over TLS to the daemon's name.
func TestEngineTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/_ping":
			w.Header().Set("Api-Version", "1.47")
		case "/v1.47/exec/x/start":
			conn, brw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			_, _ = brw.WriteString("HTTP/1.1 101 UPGRADED\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
			_, _ = brw.Write(frame(1, "over tls"))
			_ = brw.Flush()
		default:
			http.NotFound(w, r)
		}
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	t.Setenv("DOCKER_API_VERSION", "")
	t.Setenv("DOCKER_CERT_PATH", "")
	e, err := newEngine("tcp://" + srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.close)
	// As tlsFromDir would make it, with the test server's CA.
	e.tls = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	e.tr.TLSClientConfig, e.scheme = e.tls, "https"
	ctx := context.Background()
	if err := e.ping(ctx); err != nil || e.version != "1.47" {
		t.Fatalf("ping over TLS: %v, version %q", err, e.version)
	}
	h, err := e.execStart(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var out bytes.Buffer
	if err := demux(&out, io.Discard, h); err != nil || out.String() != "over tls" {
		t.Errorf("stream over TLS: %q, %v", out.String(), err)
	}
}
