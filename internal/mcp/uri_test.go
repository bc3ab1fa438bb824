package mcp

import (
	"strings"
	"testing"
)

func TestHistoryURIRoundTrip(t *testing.T) {
	for _, key := range []string{"agent:main:main", "global", "agent:ops:subagent:1f2e", "agent:main:a/b c%"} {
		uri := HistoryURI(key)
		if strings.Count(uri, "/") != 4 || strings.Contains(strings.TrimPrefix(uri, "switchboard:"), ":") {
			t.Errorf("HistoryURI(%q) = %q: the key is not one escaped path segment", key, uri)
		}
		got, err := KeyFromURI(uri)
		if err != nil || got != key {
			t.Errorf("KeyFromURI(%q) = %q, %v; want %q", uri, got, err, key)
		}
	}
}

func TestKeyFromURIRejects(t *testing.T) {
	for _, uri := range []string{
		"", "switchboard://sessions//history", "switchboard://sessions/a/b/history", "file:///etc/passwd",
		"switchboard://sessions/main", "switchboard://sessions/%zz/history", "switchboard://sessions/%20/history",
	} {
		if k, err := KeyFromURI(uri); err == nil {
			t.Errorf("KeyFromURI(%q) = %q, want an error", uri, k)
		}
	}
}

func FuzzKeyFromURI(f *testing.F) {
	f.Add("switchboard://sessions/agent%3Amain%3Amain/history")
	f.Add("switchboard://sessions/x/history")
	f.Fuzz(func(t *testing.T, uri string) {
		key, err := KeyFromURI(uri)
		if err != nil {
			return
		}
		if back, err := KeyFromURI(HistoryURI(key)); err != nil || back != key {
			t.Fatalf("round trip of %q: %q, %v", key, back, err)
		}
	})
}

func TestEndpointFromGatewayURL(t *testing.T) {
	for in, want := range map[string]string{
		"ws://127.0.0.1:18789":          "http://127.0.0.1:18789/mcp",
		"ws://127.0.0.1:18789/":         "http://127.0.0.1:18789/mcp",
		"wss://gw.example.ts.net/base/": "https://gw.example.ts.net/base/mcp",
		"http://u:p@h:1?x=1":            "http://h:1/mcp",
	} {
		got, err := EndpointFromGatewayURL(in)
		if err != nil || got != want {
			t.Errorf("EndpointFromGatewayURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := EndpointFromGatewayURL("ftp://h"); err == nil {
		t.Error("ftp:// accepted")
	}
}
