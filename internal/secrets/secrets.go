// Package secrets masks the gateway's configured secret values — provider
// API keys, the gateway's token and password, the hooks token, A2A peer
// tokens, chat bot tokens, MCP servers' headers and environment — in any
// text before it leaves the process or reaches the store: log lines, run
// errors, transcript error messages and the events clients receive.
//
// A provider that echoes its key in an error ("Invalid API key provided:
// Bearer sk-…") is the common case: the text arrives from outside and
// names no field, so masking goes by value, not by attribute name.
package secrets

import (
	"cmp"
	"slices"
	"strings"
)

// Mask replaces a secret value in masked text.
const Mask = "[redacted]"

// MinLen is the shortest value a Masker masks: shorter ones would mask
// ordinary words (and are no secret worth the name).
const MinLen = 8

// A Masker masks a fixed set of secret values. It is immutable and safe
// for concurrent use; the nil *Masker masks nothing.
type Masker struct {
	r      *strings.Replacer
	values []string
}

// New returns a masker of values; values shorter than MinLen and
// duplicates are ignored. It returns nil when nothing is left.
func New(values ...string) *Masker {
	var vs []string
	for _, v := range values {
		if v = strings.TrimSpace(v); len(v) >= MinLen && !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return nil
	}
	// Longest first, so a secret that contains another is masked whole.
	slices.SortFunc(vs, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	pairs := make([]string, 0, 2*len(vs))
	for _, v := range vs {
		pairs = append(pairs, v, Mask)
	}
	return &Masker{r: strings.NewReplacer(pairs...), values: vs}
}

// String returns s with every secret value replaced by Mask.
func (m *Masker) String(s string) string {
	if m == nil || s == "" {
		return s
	}
	return m.r.Replace(s)
}

// Contains reports whether s holds a secret value.
func (m *Masker) Contains(s string) bool {
	if m == nil {
		return false
	}
	for _, v := range m.values {
		if strings.Contains(s, v) {
			return true
		}
	}
	return false
}

// Error returns err with its text masked: err itself when its text holds
// no secret, else an error whose Error is the masked text and which
// unwraps to err (so errors.Is and errors.As still see what it wraps).
func (m *Masker) Error(err error) error {
	if m == nil || err == nil {
		return err
	}
	text := err.Error()
	if !m.Contains(text) {
		return err
	}
	return &maskedError{text: m.String(text), err: err}
}

type maskedError struct {
	text string
	err  error
}

func (e *maskedError) Error() string { return e.text }
func (e *maskedError) Unwrap() error { return e.err }
