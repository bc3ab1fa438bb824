// Package tokenize counts tokens with a model's own tokenizer where the
// tokenizer is public: OpenAI's model families (o200k_base, cl100k_base,
// through github.com/tiktoken-go/tokenizer, whose vocabularies are
// embedded and loaded on first use). For other models it has nothing to
// offer, and callers keep their calibrated estimate.
//
// Counting a long context from scratch is slow (about 10 MB of text per
// second), so a Counter remembers the counts of the long strings it has
// seen (by a hash of their content): a session's history is counted
// once, and each turn counts only what is new.
package tokenize

import (
	"hash/maphash"
	"strings"
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// Encodings a model can map to.
const (
	O200k  = "o200k_base"
	Cl100k = "cl100k_base"
)

// families maps model id prefixes to their encoding; the first match
// wins, so longer prefixes of one family come before shorter ones.
var families = []struct{ prefix, encoding string }{
	{"gpt-4o", O200k},
	{"chatgpt-4o", O200k},
	{"gpt-4.1", O200k},
	{"gpt-4.5", O200k},
	{"gpt-5", O200k},
	{"gpt-oss", O200k},
	{"codex-", O200k},
	{"o1", O200k},
	{"o3", O200k},
	{"o4", O200k},
	{"gpt-4", Cl100k},
	{"gpt-3.5", Cl100k},
	{"gpt-35", Cl100k},
	{"text-embedding-3", Cl100k},
	{"text-embedding-ada-002", Cl100k},
}

// EncodingFor returns the encoding of modelID ("gpt-4o-mini",
// "openai/gpt-4.1" as routers name it, "ft:gpt-4o:org:x"), or "" when its
// tokenizer is not known.
func EncodingFor(modelID string) string {
	id := strings.ToLower(strings.TrimSpace(modelID))
	id = strings.TrimPrefix(id, "ft:")
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		id = id[i+1:]
	}
	for _, f := range families {
		if !strings.HasPrefix(id, f.prefix) {
			continue
		}
		// "o1" must not match "o1x-model" of someone else: the family
		// name ends the id or is followed by a separator.
		if rest := id[len(f.prefix):]; rest != "" && f.prefix[len(f.prefix)-1] != '-' &&
			!strings.ContainsRune("-.:_", rune(rest[0])) {
			continue
		}
		return f.encoding
	}
	return ""
}

// Counter counts the tokens of text in one encoding. It is safe for
// concurrent use.
type Counter struct {
	name string
	enc  tokenizer.Codec

	mu    sync.Mutex
	seed  maphash.Seed
	cache map[uint64]int
}

// cacheMin is the shortest text whose count is remembered; shorter ones
// are counted again, which is cheaper than hashing and locking.
const cacheMin = 16

// cacheMax bounds the remembered counts (a few MB: the messages of about
// a hundred long sessions); when full the cache starts over.
const cacheMax = 1 << 17

// shared holds one Counter per encoding: vocabularies are large.
var shared sync.Map // encoding name -> *Counter

// ForModel returns the Counter of modelID's tokenizer, or nil when it is
// not known (see EncodingFor).
func ForModel(modelID string) *Counter {
	name := EncodingFor(modelID)
	if name == "" {
		return nil
	}
	return ForEncoding(name)
}

// ForEncoding returns the Counter of encoding name (O200k or Cl100k), or
// nil for another name.
func ForEncoding(name string) *Counter {
	if c, ok := shared.Load(name); ok {
		return c.(*Counter)
	}
	var e tokenizer.Encoding
	switch name {
	case O200k:
		e = tokenizer.O200kBase
	case Cl100k:
		e = tokenizer.Cl100kBase
	default:
		return nil
	}
	enc, err := tokenizer.Get(e)
	if err != nil {
		return nil
	}
	c, _ := shared.LoadOrStore(name, &Counter{name: name, enc: enc, seed: maphash.MakeSeed(), cache: make(map[uint64]int)})
	return c.(*Counter)
}

// Name is the encoding's name.
func (c *Counter) Name() string { return c.name }

// Count returns the tokens of s. Text the tokenizer cannot split (it
// never fails on valid UTF-8) counts as a byte per token, an
// overestimate that errs on the safe side of a context window.
func (c *Counter) Count(s string) int {
	if s == "" {
		return 0
	}
	if len(s) < cacheMin {
		return c.count(s)
	}
	h := maphash.String(c.seed, s)
	c.mu.Lock()
	n, ok := c.cache[h]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = c.count(s)
	c.mu.Lock()
	if len(c.cache) >= cacheMax {
		clear(c.cache)
	}
	c.cache[h] = n
	c.mu.Unlock()
	return n
}

func (c *Counter) count(s string) int {
	n, err := c.enc.Count(s)
	if err != nil {
		return len(s)
	}
	return n
}
