package a2a

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

type instant struct{}

func (instant) Run(context.Context, Turn, func(string)) (string, error) {
	return "ok", nil
}

func (instant) Outcome(context.Context, string) (string, bool, error) { return "", false, nil }

// BenchmarkSendMessage is one blocking SendMessage round trip over HTTP
// with a run that answers at once: the channel's own overhead.
func BenchmarkSendMessage(b *testing.B) {
	s, err := New(Config{ReplyTimeout: time.Minute, Peers: []Peer{{Name: "alpha", Token: "t"}}}, instant{}, NewMemTasks())
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer func() { hs.Close(); s.Close() }()
	body := sendBody("hi", "")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/a2a/v1", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer t")
		resp, err := hs.Client().Do(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
}

// BenchmarkSendMessage100Clients runs blocking SendMessage calls from 100
// concurrent clients (rate limit off) with a run that answers at once, and
// reports tasks/s: the channel's throughput with its own overhead only.
func BenchmarkSendMessage100Clients(b *testing.B) {
	s, err := New(Config{ReplyTimeout: time.Minute, Peers: []Peer{{Name: "alpha", Token: "t"}}}, instant{}, NewMemTasks())
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer func() { hs.Close(); s.Close() }()
	hs.Client().Transport.(*http.Transport).MaxIdleConnsPerHost = 128
	body := sendBody("hi", "")
	b.SetParallelism(max(1, 100/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodPost, hs.URL+"/a2a/v1", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer t")
			resp, err := hs.Client().Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
}
