package httpapi_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// benchClient keeps connections alive across requests, as an SDK does.
var benchClient = &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}}

func benchPost(b *testing.B, url, body string) {
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := benchClient.Do(req)
	if err != nil {
		b.Error(err)
		return
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		b.Errorf("status %d: %s", resp.StatusCode, out)
	}
}

// reportLatency reports the p50 and p99 of ds in milliseconds.
func reportLatency(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkChatCompletion: one non-streamed chat completion at a time
// (a new session each), the agent answering through the instant fake
// model over the OpenAI wire format.
func BenchmarkChatCompletion(b *testing.B) {
	b.Run("fake-llm-http", func(b *testing.B) { benchChat(b, false) })
	b.Run("offline-in-process", func(b *testing.B) { benchChat(b, true) })
}

func benchChat(b *testing.B, offline bool) {
	g := startGatewayWith(b, "", "", fakellm.Options{DiscardRequests: true}, offline)
	url := g.base + "/v1/chat/completions"
	body := `{"model":"openclaw","messages":[{"role":"user","content":"hello"}]}`
	var ds []time.Duration
	for b.Loop() {
		t0 := time.Now()
		benchPost(b, url, body)
		ds = append(ds, time.Since(t0))
	}
	reportLatency(b, ds)
}

// BenchmarkToolsInvoke: POST /tools/invoke sessions_list, one at a time.
func BenchmarkToolsInvoke(b *testing.B) {
	g := startGateway(b, "", fakellm.Options{DiscardRequests: true})
	url := g.base + "/tools/invoke"
	body := `{"tool":"sessions_list","args":{}}`
	var ds []time.Duration
	for b.Loop() {
		t0 := time.Now()
		benchPost(b, url, body)
		ds = append(ds, time.Since(t0))
	}
	reportLatency(b, ds)
}

// BenchmarkChatCompletionsConcurrent100: 100 HTTP clients sending
// non-streamed completions as fast as they are answered; reports
// completions per second.
func BenchmarkChatCompletionsConcurrent100(b *testing.B) {
	b.Run("fake-llm-http", func(b *testing.B) { benchConcurrent(b, false) })
	b.Run("offline-in-process", func(b *testing.B) { benchConcurrent(b, true) })
}

func benchConcurrent(b *testing.B, offline bool) {
	const clients = 100
	g := startGatewayWith(b, "", "", fakellm.Options{DiscardRequests: true}, offline)
	url := g.base + "/v1/chat/completions"
	body := `{"model":"openclaw","messages":[{"role":"user","content":"hello"}]}`
	b.ResetTimer()
	start := time.Now()
	work := make(chan struct{}, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for range work {
				benchPost(b, url, body)
			}
		})
	}
	for range b.N {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "completions/s")
}
