package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// defaultTracesURL is where spans go when no endpoint is set.
const defaultTracesURL = "http://localhost:4318/v1/traces"

// defaultExportTimeout bounds one export when OTEL_EXPORTER_OTLP_TIMEOUT is
// unset.
const defaultExportTimeout = 10 * time.Second

// otlpExporter sends spans to an OTLP/HTTP collector as protobuf
// (http/protobuf, the only protocol Setup accepts). It reads the standard
// settings: OTEL_EXPORTER_OTLP_[TRACES_]{ENDPOINT, HEADERS, TIMEOUT,
// COMPRESSION, CERTIFICATE, CLIENT_CERTIFICATE, CLIENT_KEY}, the
// signal-specific one winning.
type otlpExporter struct {
	url     string
	headers map[string]string
	gzip    bool
	timeout time.Duration
	client  *http.Client

	mu      sync.Mutex
	stopped bool
}

var _ sdktrace.SpanExporter = (*otlpExporter)(nil)

// newOTLPExporter reads the exporter's settings from env.
func newOTLPExporter(env func(string) string) (*otlpExporter, error) {
	get := func(name string) string {
		if v := strings.TrimSpace(env("OTEL_EXPORTER_OTLP_TRACES_" + name)); v != "" {
			return v
		}
		return strings.TrimSpace(env("OTEL_EXPORTER_OTLP_" + name))
	}
	e := &otlpExporter{url: defaultTracesURL, timeout: defaultExportTimeout}
	if v := strings.TrimSpace(env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); v != "" {
		e.url = v
	} else if v := strings.TrimSpace(env("OTEL_EXPORTER_OTLP_ENDPOINT")); v != "" {
		e.url = strings.TrimSuffix(v, "/") + "/v1/traces"
	}
	if u, err := url.Parse(e.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("telemetry: otlp endpoint %q is not an http(s) URL", e.url)
	}
	headers, err := parseHeaders(get("HEADERS"))
	if err != nil {
		return nil, err
	}
	e.headers = headers
	if v := get("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("telemetry: OTEL_EXPORTER_OTLP_TIMEOUT=%q is not a number of milliseconds", v)
		}
		e.timeout = time.Duration(ms) * time.Millisecond
	}
	switch c := strings.ToLower(get("COMPRESSION")); c {
	case "", "none":
	case "gzip":
		e.gzip = true
	default:
		return nil, fmt.Errorf("telemetry: OTEL_EXPORTER_OTLP_COMPRESSION=%q is not supported (use gzip or none)", c)
	}
	tlsCfg, err := tlsConfig(get("CERTIFICATE"), get("CLIENT_CERTIFICATE"), get("CLIENT_KEY"))
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	e.client = &http.Client{Transport: tr}
	return e, nil
}

// parseHeaders reads the W3C-baggage-like "k1=v1,k2=v2" list of
// OTEL_EXPORTER_OTLP_HEADERS (values URL-encoded).
func parseHeaders(s string) (map[string]string, error) {
	h := map[string]string{}
	for pair := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("telemetry: OTEL_EXPORTER_OTLP_HEADERS: %q is not key=value", pair)
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("telemetry: OTEL_EXPORTER_OTLP_HEADERS: %s: %w", k, err)
		}
		h[k] = dv
	}
	return h, nil
}

// tlsConfig is nil (the system roots) unless a CA file or a client
// certificate is set.
func tlsConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("telemetry: otlp certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("telemetry: otlp certificate %s: no PEM certificates", caFile)
		}
		cfg.RootCAs = pool
	}
	if certFile != "" || keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("telemetry: otlp client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// ExportSpans posts spans as one request, retrying a few times on the
// statuses OTLP calls retryable (429, 502, 503, 504) within ctx and the
// export timeout.
func (e *otlpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	stopped := e.stopped
	e.mu.Unlock()
	if stopped || len(spans) == 0 {
		return nil
	}
	body := encodeTraceRequest(spans)
	if e.gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(body); err != nil {
			return fmt.Errorf("telemetry: otlp gzip: %w", err)
		}
		if err := zw.Close(); err != nil {
			return fmt.Errorf("telemetry: otlp gzip: %w", err)
		}
		body = buf.Bytes()
	}
	if e.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.timeout)
		defer cancel()
	}
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		retry, err := e.post(ctx, body)
		if err == nil || !retry || attempt == 4 {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (%w)", err, ctx.Err())
		case <-t.C:
		}
		backoff *= 2
	}
}

// post sends one request; retry says whether the failure may pass.
func (e *otlpExporter) post(ctx context.Context, body []byte) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("telemetry: otlp request: %w", err)
	}
	for k, v := range e.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if e.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return ctx.Err() == nil, fmt.Errorf("telemetry: otlp export: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return false, nil
	}
	err = fmt.Errorf("telemetry: otlp export: %s: %s", resp.Status, bytes.TrimSpace(msg))
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true, err
	}
	return false, err
}

// Shutdown stops exporting; spans handed over later are dropped.
func (e *otlpExporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	e.stopped = true
	e.mu.Unlock()
	e.client.CloseIdleConnections()
	if err := ctx.Err(); err != nil {
		return errors.Join(errors.New("telemetry: otlp shutdown"), err)
	}
	return nil
}
