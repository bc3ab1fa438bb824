package a2a

import (
	"context"
	"net/http"
	"net/http/httptest"
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
