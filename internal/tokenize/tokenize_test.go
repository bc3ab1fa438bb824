package tokenize

import (
	"strings"
	"sync"
	"testing"
)

func TestEncodingFor(t *testing.T) {
	for _, tt := range []struct{ model, want string }{
		{"gpt-4o", O200k},
		{"gpt-4o-mini", O200k},
		{"GPT-4o-2024-08-06", O200k},
		{"openai/gpt-4.1-mini", O200k},
		{"gpt-4.1", O200k},
		{"gpt-5", O200k},
		{"gpt-5.1-codex", O200k},
		{"gpt-oss-20b", O200k},
		{"o1", O200k},
		{"o3-mini", O200k},
		{"o4-mini-high", O200k},
		{"ft:gpt-4o-mini:acme::abc", O200k},
		{"gpt-4", Cl100k},
		{"gpt-4-turbo", Cl100k},
		{"gpt-3.5-turbo", Cl100k},
		{"gpt-35-turbo", Cl100k},
		{"text-embedding-3-small", Cl100k},
		{"claude-sonnet-4-5", ""},
		{"llama3.1", ""},
		{"o1x-local", ""},
		{"ollama", ""},
		{"", ""},
		{"echo-1", ""},
	} {
		if got := EncodingFor(tt.model); got != tt.want {
			t.Errorf("EncodingFor(%q) = %q, want %q", tt.model, got, tt.want)
		}
	}
}

// TestCount checks counts the OpenAI tokenizers are documented to give.
func TestCount(t *testing.T) {
	for _, tt := range []struct {
		enc, text string
		want      int
	}{
		{Cl100k, "tiktoken is great!", 6},
		{O200k, "hello world", 2},
		{Cl100k, "hello world", 2},
		{O200k, "", 0},
	} {
		c := ForEncoding(tt.enc)
		if c == nil {
			t.Fatalf("ForEncoding(%q) = nil", tt.enc)
		}
		if got := c.Count(tt.text); got != tt.want {
			t.Errorf("%s Count(%q) = %d, want %d", tt.enc, tt.text, got, tt.want)
		}
	}
	if ForEncoding("p50k_base") != nil || ForModel("claude-3") != nil {
		t.Error("a counter for an encoding or model that has none")
	}
	if ForModel("gpt-4o") != ForModel("gpt-5") {
		t.Error("one encoding, two counters")
	}
}

// TestCountCached counts long text the same whether cached or not, and
// from many goroutines.
func TestCountCached(t *testing.T) {
	c := ForEncoding(O200k)
	long := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 200)
	want := c.count(long)
	if want < 1000 || want > 3000 {
		t.Fatalf("count of %d bytes = %d", len(long), want)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if got := c.Count(long); got != want {
					t.Errorf("Count = %d, want %d", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := c.Count(long + "and the cat"); got <= want || got > want+3 {
		t.Errorf("Count of a longer text = %d (was %d)", got, want)
	}
}

func BenchmarkCount(b *testing.B) {
	c := ForEncoding(O200k)
	long := strings.Repeat("func main() { fmt.Println(\"hello, world\") } // a line of Go\n", 1000)
	b.Run("uncached", func(b *testing.B) {
		b.SetBytes(int64(len(long)))
		for b.Loop() {
			c.count(long)
		}
	})
	b.Run("cached", func(b *testing.B) {
		b.SetBytes(int64(len(long)))
		c.Count(long)
		for b.Loop() {
			c.Count(long)
		}
	})
}
