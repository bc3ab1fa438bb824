package shell

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// capBuffer is an io.Writer that keeps the first head and the last tail
// bytes written to it and counts what falls between. Safe for concurrent
// use (stdout and stderr share one).
type capBuffer struct {
	mu      sync.Mutex
	head    []byte
	tail    []byte // ring of at most tailMax bytes
	start   int    // index of the oldest byte in tail once it is full
	headMax int
	tailMax int
	total   int64
}

func newCapBuffer(limit int) *capBuffer {
	h := limit / 2
	return &capBuffer{headMax: h, tailMax: limit - h}
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	b.total += int64(n)
	if room := b.headMax - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	if b.tailMax == 0 {
		return n, nil
	}
	if len(p) >= b.tailMax {
		b.tail = append(b.tail[:0], p[len(p)-b.tailMax:]...)
		b.start = 0
		return n, nil
	}
	for len(p) > 0 {
		if len(b.tail) < b.tailMax {
			k := min(b.tailMax-len(b.tail), len(p))
			b.tail = append(b.tail, p[:k]...)
			p = p[k:]
			continue
		}
		k := copy(b.tail[b.start:], p)
		b.start = (b.start + k) % b.tailMax
		p = p[k:]
	}
	return n, nil
}

// String returns what was kept: everything when nothing was dropped,
// else the head, a note of how many bytes were left out, and the tail, cut
// at rune boundaries. truncated reports whether bytes were dropped.
func (b *capBuffer) String() (out string, truncated bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	tail := append(append([]byte(nil), b.tail[b.start:]...), b.tail[:b.start]...)
	kept := int64(len(b.head) + len(tail))
	if kept == b.total {
		return string(b.head) + string(tail), false
	}
	head := trimPartialRuneEnd(b.head)
	tail = trimPartialRuneStart(tail)
	omitted := b.total - int64(len(head)) - int64(len(tail))
	return fmt.Sprintf("%s\n\n[... %d bytes of output omitted ...]\n\n%s", head, omitted, tail), true
}

// trimPartialRuneEnd drops an incomplete UTF-8 sequence at the end of p.
func trimPartialRuneEnd(p []byte) []byte {
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				return p[:i]
			}
			break
		}
	}
	return p
}

// trimPartialRuneStart drops continuation bytes at the start of p.
func trimPartialRuneStart(p []byte) []byte {
	for i := 0; i < len(p) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(p[i]) {
			return p[i:]
		}
	}
	return p
}
