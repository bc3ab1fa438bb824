package config

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/titanous/json5"
)

func TestScanSource(t *testing.T) {
	src := "// header { not: an object }\n" + // 1
		"{\n" + // 2
		"  /* block { [ \n" + // 3
		"     still comment */ a: 1,\n" + // 4
		"  'b': { \"c\": 'it\\'s {not} a key: x',\n" + // 5
		"    d: [ 1,\n" + // 6
		"      { e: \"line\\\n" + // 7
		"continued\" }, [ 2 ],\n" + // 8
		"    ],\n" + // 9
		"  },\r\n" + // 10
		"  \"dot.ted\": true,\r" + // 11 (lone CR)
		"  $odd_key1: null, // trailing comment with } \n" + // 12
		"  a: 2,\n" + // 13 (repeat: last wins)
		"  'q\\u0041': 0, 'x\\\\y': 0,\n" + // 14
		"}\n"
	m := scanSource([]byte(src))
	want := map[string]int{
		"":            2,
		"a":           13,
		"b":           5,
		"b.c":         5,
		"b.d":         6,
		"b.d[0]":      6,
		"b.d[1]":      7,
		"b.d[1].e":    7,
		"b.d[2]":      8,
		"b.d[2][0]":   8,
		`["dot.ted"]`: 11,
		"$odd_key1":   12,
		"qA":          14,
		`["x\\y"]`:    14,
	}
	if diff := cmp.Diff(want, m.lines); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	wantDups := []located{{path: keyPath{{key: "a", index: -1}}, line: 13}}
	if diff := cmp.Diff(wantDups, m.dups, cmp.AllowUnexported(located{}, pathElem{})); diff != "" {
		t.Errorf("dups (-want +got):\n%s", diff)
	}
	if !m.tokens {
		t.Error("tokens = false")
	}

	// The finder agrees with the decoder on every key.
	var tree any
	if err := json5.Unmarshal([]byte(src), &tree); err != nil {
		t.Fatalf("test input is not JSON5: %v", err)
	}
	checkAllPaths(t, m, nil, tree)
}

func TestLineOf(t *testing.T) {
	m := scanSource([]byte("{\n a: {\n  b: [\n   {c: 1},\n  ],\n },\n}"))
	tests := []struct {
		p    keyPath
		want int
	}{
		{path("a"), 2},
		{path("a", "b"), 3},
		{path("a", "b").index(0).key("c"), 4},
		{path("a", "b").index(0).key("missing"), 4},
		{path("a", "b").index(7), 3},
		{path("a", "zzz", "yyy"), 2},
		{path("nope"), 1},
		{nil, 1},
	}
	for _, tt := range tests {
		if got := m.lineOf(tt.p); got != tt.want {
			t.Errorf("lineOf(%s) = %d, want %d", tt.p, got, tt.want)
		}
	}
	var none *sourceMap
	if none.lineOf(path("a")) != 0 || none.has(path("a")) {
		t.Error("nil sourceMap knows a line")
	}
}

func TestKeyPathString(t *testing.T) {
	tests := []struct {
		p    keyPath
		want string
	}{
		{nil, ""},
		{path("a", "b"), "a.b"},
		{path("agents", "list").index(2).key("id"), "agents.list[2].id"},
		{path("models", "providers", "my.provider", "apiKey"), `models.providers["my.provider"].apiKey`},
		{path("x", "", "1a", "-a", "a-1"), `x[""]["1a"]["-a"].a-1`},
		{keyPath{}.index(0), "[0]"},
		{path("tools", "sessions_spawn"), "tools.sessions_spawn"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestLineAtOffset(t *testing.T) {
	src := []byte("a\nb\r\nc\rd")
	for off, want := range []int{1, 1, 2, 2, 2, 3, 3, 4, 4} {
		if got := lineAtOffset(src, off); got != want {
			t.Errorf("lineAtOffset(%d) = %d, want %d", off, got, want)
		}
	}
	if lineAtOffset(src, -5) != 1 || lineAtOffset(src, 99) != 4 {
		t.Error("lineAtOffset does not clamp")
	}
}

func TestNesting(t *testing.T) {
	tests := []struct {
		src         string
		depth, line int
	}{
		{"", 0, 0},
		{"{}", 1, 1},
		{"{a:[\n[{}]]}", 4, 2},
		{"{a:'[[[[', /* [[[ */ b: [] // [[[\n}", 2, 1},
		{"{a: / [[[", 4, 1}, // never undercounts after junk
		{"[[[", 3, 1},
	}
	for _, tt := range tests {
		d, l := nesting([]byte(tt.src))
		if d != tt.depth || l != tt.line {
			t.Errorf("nesting(%q) = %d, %d; want %d, %d", tt.src, d, l, tt.depth, tt.line)
		}
	}
}

// checkAllPaths fails when a key or element of the decoded tree v at p has
// no line in m.
func checkAllPaths(t *testing.T, m *sourceMap, p keyPath, v any) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			kp := p.key(k)
			if !m.has(kp) {
				t.Fatalf("no line for key %s", kp)
			}
			checkAllPaths(t, m, kp, e)
		}
	case []any:
		for i, e := range v {
			ip := p.index(i)
			if !m.has(ip) {
				t.Fatalf("no line for element %s", ip)
			}
			checkAllPaths(t, m, ip, e)
		}
	}
}

func fuzzSeeds(f *testing.F) {
	for _, name := range []string{"testdata/fake-provider.json5", "testdata/openclaw.json5"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"", "{}", "[]", "{a:1,}", "{'a':\"b\",}", "// c\n{/* x */}", "{a:'\\u00e9\\uD83D\\uDE00'}",
		"{a:\"x\\\ny\"}", "{\"a\\\"b\": 1}", "{a:[1,[2,{b:3}],],}", "{a:1}\n{b:2}", "{a:+Infinity, b:0x1F, c:.5}",
		"{gateway:{port:'x', bind:'lan'}}", "{a: /", "{a:'unterminated", "{\r\na:1\r}", "{\u2028a:1}",
		"{agents:{list:[{id:'a'},{id:'A'}]}}", "{models:{mode:'replace', providers:{f:{baseUrl:'http://x'}}}}",
		"{mcp:{servers:{a:{command:'x',args:['1'],env:{K:'${X}'}},b:{url:'http://h/mcp',transport:'sse',headers:{A:'b'},toolFilter:{include:['*']}}}}}",
		"{tools:{deny:['a__*']},agents:{list:[{id:'a',tools:{allow:['x']}}]}}",
		"{channels:{telegram:{botToken:'1:x',webhookUrl:'https://h/tg',webhookSecret:'s_1',groups:{'-100':{topics:{'3':{requireMention:false}}},'*':{tools:{deny:['x']}}}}}}",
	} {
		f.Add([]byte(s))
	}
}

func FuzzScanSource(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		m := scanSource(src)
		lines := bytes.Count(src, []byte("\n")) + bytes.Count(src, []byte("\r")) + 1
		for p, l := range m.lines {
			if l < 1 || l > lines {
				t.Fatalf("line %d of %q outside 1..%d", l, p, lines)
			}
		}
		depth, _ := nesting(src)
		if depth > maxNesting {
			return // the decoder is never run on such input
		}
		var tree any
		if err := unmarshal(src, &tree); err != nil {
			var se *json5.SyntaxError
			if !errors.As(err, &se) {
				return
			}
			if l := lineAtOffset(src, int(se.Offset)-1); l < 1 || l > lines {
				t.Fatalf("syntax error line %d outside 1..%d", l, lines)
			}
			return
		}
		checkAllPaths(t, m, nil, tree)
	})
}
