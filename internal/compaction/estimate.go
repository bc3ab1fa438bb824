package compaction

import (
	"sync"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// Token estimates: a conservative characters/4 heuristic (bytes of UTF-8,
// which weighs CJK text about three times heavier than ASCII, as tokenizers
// do), plus a small per-message overhead for the role framing.
const (
	bytesPerToken   = 4
	messageOverhead = 4
)

// TextTokens estimates the tokens of a string.
func TextTokens(s string) int { return (len(s) + bytesPerToken - 1) / bytesPerToken }

// MessageTokens estimates the tokens of one model message.
func MessageTokens(m *provider.Message) int { return Counter{}.Message(m) }

// RequestTokens estimates the prompt tokens of a request: the system prompt,
// the tool schemas and every message.
func RequestTokens(req *provider.Request) int { return Counter{}.Request(req) }

// Counter counts tokens for one model: with the model's own tokenizer when
// Text is set (package tokenize), else with the bytes/4 estimate. The
// zero value estimates. Either way a message adds a small overhead for its
// role framing.
type Counter struct {
	// Text counts the tokens of a string; nil means TextTokens.
	Text func(string) int
}

// Exact reports whether c counts with a tokenizer.
func (c Counter) Exact() bool { return c.Text != nil }

// String counts the tokens of s.
func (c Counter) String(s string) int {
	if c.Text == nil {
		return TextTokens(s)
	}
	return c.Text(s)
}

// bytes counts the tokens of b as String does, copying b into a string
// only for a tokenizer (the estimate needs its length alone; the copy of
// every tool schema was most of a warm turn's allocation).
func (c Counter) bytes(b []byte) int {
	if c.Text == nil {
		return (len(b) + bytesPerToken - 1) / bytesPerToken
	}
	return c.Text(string(b))
}

// Message counts the tokens of one model message.
func (c Counter) Message(m *provider.Message) int {
	if c.Text == nil {
		n := len(m.Text)
		for _, tc := range m.ToolCalls {
			n += len(tc.ID) + len(tc.Name) + len(tc.Arguments)
		}
		n += len(m.ToolCallID)
		return (n+bytesPerToken-1)/bytesPerToken + messageOverhead
	}
	n := c.Text(m.Text)
	for _, tc := range m.ToolCalls {
		n += c.Text(tc.ID) + c.Text(tc.Name) + c.Text(string(tc.Arguments))
	}
	return n + c.Text(m.ToolCallID) + messageOverhead
}

// Request counts the prompt tokens of a request: the system prompt, the
// tool schemas and every message.
func (c Counter) Request(req *provider.Request) int {
	n := c.String(req.System)
	for i := range req.Tools {
		t := &req.Tools[i]
		n += c.String(t.Name) + c.String(t.Description) + c.bytes(t.Parameters)
	}
	for i := range req.Messages {
		n += c.Message(&req.Messages[i])
	}
	return n
}

// Calibrator scales estimates by what each model's provider reported: after
// a call, Observe records the ratio of the prompt tokens the provider
// counted to the estimate of the same request, and Scale applies the
// running ratio (an exponential average, clamped to [0.5, 4]) to later
// estimates for that model. Safe for concurrent use.
type Calibrator struct {
	mu     sync.Mutex // guards ratios
	ratios map[string]float64
}

// maxCalibrated bounds how many models a Calibrator remembers.
const maxCalibrated = 256

// Observe records that a request estimated at estimate tokens was counted
// as reported prompt tokens by model's provider. Zero values are ignored.
func (c *Calibrator) Observe(model string, estimate, reported int64) {
	if estimate <= 0 || reported <= 0 {
		return
	}
	r := min(max(float64(reported)/float64(estimate), 0.5), 4)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ratios == nil {
		c.ratios = make(map[string]float64)
	}
	old, ok := c.ratios[model]
	if !ok && len(c.ratios) >= maxCalibrated {
		for k := range c.ratios {
			delete(c.ratios, k)
			break
		}
	}
	if ok {
		r = old*0.5 + r*0.5
	}
	c.ratios[model] = r
}

// Known reports whether model has been observed.
func (c *Calibrator) Known(model string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.ratios[model]
	return ok
}

// Ratio returns the calibration ratio of model (1 when unknown).
func (c *Calibrator) Ratio(model string) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.ratios[model]; ok {
		return r
	}
	return 1
}

// Scale returns estimate scaled by model's ratio, rounded up.
func (c *Calibrator) Scale(model string, estimate int) int {
	r := c.Ratio(model)
	if r == 1 {
		return estimate
	}
	return int(float64(estimate)*r + 0.999)
}
