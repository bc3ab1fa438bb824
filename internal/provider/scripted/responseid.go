package scripted

import (
	"math/bits"
	"slices"
	"sync"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// The response id is "<name>-<16 hex digits>", a 64-bit hash of every
// field of the request but Sampling. A warm turn's request repeats the
// session's history window of the turn before, slid by a message or two,
// so hashing it whole cost a turn time linear in the window (about 11 µs
// of a 400-message window, 20 µs of 1,000). The hash is built in three
// parts so that the parts a turn repeats are remembered instead of
// hashed again:
//
//   - the system prompt and the tools form the fixed digest, a hash of
//     their own;
//   - each message has its own digest, and the messages' digests d₀…dₙ₋₁
//     form the polynomial Σ dᵢ·Bⁿ⁻¹⁻ⁱ modulo the prime 2⁶¹−1, whose value
//     over any window of a longer sequence is the difference of two
//     prefix values (f[b] − f[a]·Bᵇ⁻ᵃ), so that a window that slid by k
//     messages costs the digests of its k new messages;
//   - the model, the fixed digest, the message count, the polynomial,
//     MaxTokens and Thinking are hashed last.
//
// The memo (idMemo) remembers recent windows and fixed parts and reuses
// them only for a request equal to them by value; it never changes an id:
// responseID equals scratchID for every request.

// responseID returns the response id of req, reusing the digests the memo
// holds for what req repeats of earlier requests.
func (p *Provider) responseID(req *provider.Request) string {
	fixed := p.ids.fixed(req.System, req.Tools)
	return formatID(p.name, idSum(req, fixed, p.ids.chain(req.Messages)))
}

// scratchID is responseID computed from scratch, without the memo.
func scratchID(name string, req *provider.Request) string {
	return formatID(name, idSum(req, fixedDigest(req.System, req.Tools), windowValue(req.Messages)))
}

// idSum hashes the request's own fields with its fixed digest and the
// polynomial of its messages. Every field has a fixed width or goes in
// with its length.
func idSum(req *provider.Request, fixed, poly uint64) uint64 {
	var h hasher
	hashBytes(&h, req.Model)
	h.u64(fixed)
	h.u64(uint64(len(req.Messages)))
	h.u64(poly)
	h.u64(uint64(req.MaxTokens))
	hashBytes(&h, req.Thinking)
	return h.sum()
}

func formatID(name string, sum uint64) string {
	var buf [64]byte
	b := append(buf[:0], name...)
	b = append(b, '-')
	const hex = "0123456789abcdef"
	for shift := 60; shift >= 0; shift -= 4 {
		b = append(b, hex[sum>>uint(shift)&0xf])
	}
	return string(b)
}

// fixedDigest hashes the system prompt and the tools.
func fixedDigest(system string, tools []provider.ToolDef) uint64 {
	var h hasher
	hashBytes(&h, system)
	h.u64(uint64(len(tools)))
	for i := range tools {
		t := &tools[i]
		hashBytes(&h, t.Name)
		hashBytes(&h, t.Description)
		hashBytes(&h, t.Parameters)
	}
	return h.sum()
}

// windowValue is the polynomial of msgs computed from scratch.
func windowValue(msgs []provider.Message) uint64 {
	var f uint64
	for i := range msgs {
		f = addMod(mulMod(f, polyBase), messageDigest(&msgs[i]))
	}
	return f
}

// messageDigest is the digest of one message, reduced modulo polyPrime.
func messageDigest(m *provider.Message) uint64 {
	var h hasher
	hashMessage(&h, m)
	d := h.sum() >> 3
	if d >= polyPrime {
		d -= polyPrime
	}
	return d
}

// hashMessage mixes every field of m into h. A request carries the
// session's history (hundreds of messages of a few words each), so the
// lengths and flags of a message go in as one word when they fit in it
// (the top bit tells the two forms apart) and empty strings cost nothing:
// about three rounds per message where a round per field took nine. The
// images, if any, come last, after their count: the words before them
// tell where the tool calls end.
func hashMessage(h *hasher, m *provider.Message) {
	var isErr uint64
	if m.IsError {
		isErr = 1
	}
	if len(m.Role) < 1<<8 && len(m.ToolCallID) < 1<<8 && len(m.ToolName) < 1<<8 &&
		len(m.ToolCalls) < 1<<6 && uint64(len(m.Text)) < 1<<32 {
		h.u64(1<<63 | isErr<<62 | uint64(len(m.ToolCalls))<<56 | uint64(len(m.Role))<<48 |
			uint64(len(m.ToolCallID))<<40 | uint64(len(m.ToolName))<<32 | uint64(len(m.Text)))
		hashRaw(h, m.Role)
		hashRaw(h, m.Text)
		hashRaw(h, m.ToolCallID)
		hashRaw(h, m.ToolName)
	} else {
		h.u64(isErr)
		hashBytes(h, m.Role)
		hashBytes(h, m.Text)
		h.u64(uint64(len(m.ToolCalls)))
		hashBytes(h, m.ToolCallID)
		hashBytes(h, m.ToolName)
	}
	for _, c := range m.ToolCalls {
		hashBytes(h, c.ID)
		hashBytes(h, c.Name)
		hashBytes(h, c.Arguments)
	}
	if len(m.Images) > 0 {
		h.u64(uint64(len(m.Images)))
		for _, im := range m.Images {
			hashBytes(h, im.MimeType)
			hashBytes(h, im.Data)
		}
	}
}

// Arithmetic modulo the Mersenne prime 2⁶¹−1. Every value is kept
// reduced (below polyPrime), so that equal values have equal bits.
const (
	polyPrime = 1<<61 - 1
	// polyBase is the polynomial's base, a fixed number below polyPrime
	// (the fractional bits of √2).
	polyBase = 0x16a09e667f3bcc9
)

func mulMod(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b) // a, b < 2⁶¹: the product is below 2¹²²
	// 2⁶¹ ≡ 1, so the product is ≡ its 61-bit digits added up.
	r := lo&polyPrime + (hi<<3 | lo>>61)
	if r >= polyPrime {
		r -= polyPrime
	}
	return r
}

func addMod(a, b uint64) uint64 {
	r := a + b
	if r >= polyPrime {
		r -= polyPrime
	}
	return r
}

func subMod(a, b uint64) uint64 {
	if a >= b {
		return a - b
	}
	return a + polyPrime - b
}

// powBase returns polyBase to the n.
func powBase(n int) uint64 {
	r, b := uint64(1), uint64(polyBase)
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			r = mulMod(r, b)
		}
		b = mulMod(b, b)
	}
	return r
}

// Bounds of the memo. It holds at most memoChains windows of at most
// maxChainMessages messages each, referring to at most maxChainBytes of
// text, tool calls and images each (a window over either bound is not
// kept), and memoFixed system prompts and tool sets of at most
// maxFixedBytes each. At worst that is about 8 × (1 MiB referred to +
// 0.5 MiB of message headers and prefix values, the arrays growing by
// appends) + 4 × 2 × 256 KiB ≈ 14 MiB, most of it strings the runner's
// transcript cache holds as well; each window also keeps the caller's
// array of the last request matched to it (to guess where the next one
// starts), at most maxChainMessages messages. A warm gateway's memo holds
// its few busiest sessions' windows (400 messages of a few words: about
// 60 KiB each).
const (
	memoChains       = 8
	maxChainMessages = 2048
	maxChainBytes    = 1 << 20
	memoFixed        = 4
	maxFixedBytes    = 256 << 10
	// alignHints is how many starts of a remembered window are tried
	// first: a window that slid by up to that many messages.
	alignHints = 8
	// ghostReach is how many messages a returning session's request may
	// have added since the one that left its ghost.
	ghostReach = 32
	// alignBudget bounds the message comparisons of the wider search of
	// one request beyond the likely starts.
	alignBudget = 64
)

// idMemo remembers the message windows and fixed parts of recent requests
// with their digests. The Provider serves every session's runs at once,
// so it is guarded by a mutex and holds several windows, the least
// recently used one giving way to a request that matches none but
// continues another that missed recently (see chain). It keeps
// private copies of everything mutable it compares with later (tool
// calls and their arguments, images, schemas): what it keeps of a
// request is compared by value, never by where it is in memory. The zero
// value is ready to use.
type idMemo struct {
	mu     sync.Mutex
	tick   uint64
	chains [memoChains]chain
	fixes  [memoFixed]fixedEntry
	// ghosts hold the fingerprints (ghost) of the last requests that
	// matched no window.
	ghosts    [memoChains]uint64
	nextGhost int
}

// chain is a remembered message window: msgs = buf[off:], and f[i] the
// polynomial of the sequence it was hashed in up to msgs[i] (exclusive),
// so that the window msgs[a:b] has the polynomial f[b] − f[a]·Bᵇ⁻ᵃ.
type chain struct {
	buf   []provider.Message
	fbuf  []uint64 // len(fbuf) == len(buf)+1
	off   int
	bytes int // what msgs refers to (messageBytes)
	used  uint64
	// prev is the last request matched to the window, whose first
	// message is msgs[prevAt]: the caller's memory, kept to guess where
	// the next request starts (align), never read.
	prev   []provider.Message
	prevAt int
}

func (c *chain) msgs() []provider.Message { return c.buf[c.off:] }
func (c *chain) f() []uint64              { return c.fbuf[c.off:] }

// value is the polynomial of msgs[a:b].
func (c *chain) value(a, b int) uint64 {
	f := c.f()
	return subMod(f[b], mulMod(f[a], powBase(b-a)))
}

// reset forgets the window, keeping its arrays.
func (c *chain) reset() {
	clear(c.buf)
	c.buf, c.fbuf, c.off, c.bytes = c.buf[:0], append(c.fbuf[:0], 0), 0, 0
	c.prev, c.prevAt = nil, 0
}

// keep forgets all of the window but msgs[a:b].
func (c *chain) keep(a, b int) {
	m := c.msgs()
	for i := range m[:a] {
		c.bytes -= messageBytes(&m[i])
	}
	for i := range m[b:] {
		c.bytes -= messageBytes(&m[b+i])
	}
	clear(m[b:])
	clear(m[:a])
	c.buf, c.fbuf = c.buf[:c.off+b], c.fbuf[:c.off+b+1]
	c.off += a
}

// push appends a copy of m, whose digest is d, to the window, with m's
// tool calls and their arguments copied into the arrays of a (see arena).
func (c *chain) push(m *provider.Message, d uint64, a *arena) {
	if len(c.buf) == cap(c.buf) && c.off > 0 && c.off >= len(c.buf)/2 {
		// Move the window to the start of its array instead of growing
		// it; at least half of the array is free then, so the window
		// moves at most once per as many pushes as it holds.
		n := copy(c.buf, c.buf[c.off:])
		clear(c.buf[n:])
		c.buf = c.buf[:n]
		c.fbuf = c.fbuf[:copy(c.fbuf, c.fbuf[c.off:])]
		c.off = 0
	}
	f := c.fbuf[len(c.fbuf)-1]
	c.buf = append(c.buf, a.copy(m))
	c.fbuf = append(c.fbuf, addMod(mulMod(f, polyBase), d))
	c.bytes += messageBytes(m)
}

// arena holds the private copies of the tool calls of the messages one
// request adds to a window, in two arrays allocated at their final size
// (a cold window of hundreds of tool calls cost two allocations per call).
type arena struct {
	calls []provider.ToolCall
	args  []byte
}

// newArena sizes an arena for msgs.
func newArena(msgs []provider.Message) arena {
	var calls, args int
	for i := range msgs {
		calls += len(msgs[i].ToolCalls)
		for j := range msgs[i].ToolCalls {
			args += len(msgs[i].ToolCalls[j].Arguments)
		}
	}
	var a arena
	if calls > 0 {
		a.calls = make([]provider.ToolCall, 0, calls)
	}
	if args > 0 {
		a.args = make([]byte, 0, args)
	}
	return a
}

// copy returns a copy of m that shares none of its mutable memory
// (strings are immutable and are shared). The arena's arrays never grow
// past the size newArena gave them, so the copies stay in them.
func (a *arena) copy(m *provider.Message) provider.Message {
	c := *m
	c.ToolCalls, c.Images = nil, nil
	if len(m.ToolCalls) > 0 {
		start := len(a.calls)
		for _, tc := range m.ToolCalls {
			n := len(a.args)
			a.args = append(a.args, tc.Arguments...)
			tc.Arguments = a.args[n:len(a.args):len(a.args)]
			a.calls = append(a.calls, tc)
		}
		c.ToolCalls = a.calls[start:len(a.calls):len(a.calls)]
	}
	if len(m.Images) > 0 {
		c.Images = slices.Clone(m.Images)
	}
	return c
}

// align returns the start j and length l of the longest run of msgs (l
// of them) that the window repeats from its j-th message on, trying the
// likely starts first (the window slid by up to alignHints messages) and
// stopping at a start from which the window's rest, or all of msgs, is
// repeated. The other starts are tried while *budget, which they spend a
// message comparison each, lasts.
func (c *chain) align(msgs []provider.Message, budget *int) (j, l int) {
	m := c.msgs()
	if len(m) == 0 || len(msgs) == 0 {
		return 0, 0
	}
	bestJ, bestL := 0, 0
	// full reports whether msgs repeats m from s on as far as both go.
	full := func(s int) bool {
		n := min(len(m)-s, len(msgs))
		k := commonPrefix(m[s:s+n], msgs[:n])
		if k > bestL || k == n {
			bestJ, bestL = s, k
		}
		return k == n
	}
	// The start the caller's memory suggests first: where msgs begins
	// in the array of the last request matched to the window, if it
	// does. It is a guess only, checked by value like any other start;
	// it matters when a history repeats itself (a client sending
	// "hello" again and again), where m and msgs match by value from
	// several starts and the right one has strings that share their
	// bytes, which compare without reading them.
	guess := -1
	for k := range min(len(c.prev), 2*alignHints) {
		if &c.prev[k] == &msgs[0] {
			guess = c.prevAt + k
			if guess < len(m) && full(guess) {
				return bestJ, bestL
			}
			break
		}
	}
	// msgs starts at hint if it only added messages to the window, and
	// a little later if it also dropped some from its start: a window at
	// its limit (msgs no longer than m) has slid, and those later starts
	// are tried first.
	hint, shift := max(len(m)-len(msgs), 0), 0
	if len(msgs) <= len(m) {
		shift = 1
	}
	for t := range alignHints {
		if s := hint + (t+shift)%alignHints; s < len(m) && s != guess && full(s) {
			return bestJ, bestL
		}
	}
	// A wider search: each start compares one message unless it matches
	// the first of msgs.
	for s := 0; s < len(m) && *budget > 0; s++ {
		if s >= hint && s < hint+alignHints {
			continue
		}
		*budget--
		if !sameMessage(&m[s], &msgs[0]) {
			continue
		}
		*budget -= min(len(m)-s, len(msgs))
		if full(s) {
			return bestJ, bestL
		}
	}
	return bestJ, bestL
}

// chain returns the polynomial of msgs (windowValue), from the digests
// the memo holds for the messages msgs repeats of a remembered window,
// and remembers msgs for the next request.
func (ids *idMemo) chain(msgs []provider.Message) uint64 {
	n := len(msgs)
	if n == 0 {
		return 0
	}
	if n > maxChainMessages {
		return windowValue(msgs)
	}
	ids.mu.Lock()
	if v, ok := ids.extendLocked(msgs); ok {
		ids.mu.Unlock()
		return v
	}
	ids.mu.Unlock()

	// msgs matches no window. Its hash is computed outside the lock, and
	// it takes a window's place only if it continues a request that
	// missed recently too (its session has just come back: a ghost
	// holds the digests of that request's last two messages). Sessions that
	// come back less often than the memo has windows would only evict
	// each other; copying their windows cost more than hashing them.
	var (
		f    uint64
		last [ghostReach]uint64
	)
	for i := range msgs {
		d := messageDigest(&msgs[i])
		f = addMod(mulMod(f, polyBase), d)
		last[i%ghostReach] = d
	}
	ids.mu.Lock()
	defer ids.mu.Unlock()
	ids.tick++
	if !ids.returningLocked(&last, n) {
		ids.ghosts[ids.nextGhost] = ghost(&last, n)
		ids.nextGhost = (ids.nextGhost + 1) % len(ids.ghosts)
		return f
	}
	c := &ids.chains[0]
	for i := range ids.chains {
		if ids.chains[i].used < c.used {
			c = &ids.chains[i]
		}
	}
	c.reset()
	c.used, c.prev = ids.tick, msgs
	a := newArena(msgs)
	for i := range msgs {
		c.push(&msgs[i], messageDigest(&msgs[i]), &a)
	}
	if c.bytes > maxChainBytes {
		c.reset()
	}
	return f
}

// returningLocked reports whether two consecutive messages among the
// last of a request (last holds the digests of its last ghostReach
// messages, n of them in all) are the last two of a request that missed
// recently, and forgets that ghost.
func (ids *idMemo) returningLocked(last *[ghostReach]uint64, n int) bool {
	for k := 1; k <= min(n, ghostReach-1); k++ {
		g := ghost(last, n-k+1)
		for i := range ids.ghosts {
			if ids.ghosts[i] == g {
				ids.ghosts[i] = 0
				return true
			}
		}
	}
	return false
}

// ghost is the fingerprint of the first n messages of a request whose
// digests from the (n-ghostReach)-th on are in last: the polynomial of its
// last two (of its only one if n is 1), plus one, as zero is no ghost.
func ghost(last *[ghostReach]uint64, n int) uint64 {
	var prev uint64
	if n > 1 {
		prev = last[(n-2)%ghostReach]
	}
	return addMod(mulMod(prev, polyBase), last[(n-1)%ghostReach]) + 1
}

// extendLocked returns the polynomial of msgs if it repeats enough of a
// remembered window, which becomes msgs; ok is false if it matches none.
func (ids *idMemo) extendLocked(msgs []provider.Message) (v uint64, ok bool) {
	n := len(msgs)
	ids.tick++
	// The windows are tried from the most recently used on, and the
	// searches beyond the likely starts share a small budget: a request
	// that matches no window (a new session, or more busy sessions than
	// windows) costs little more than hashing it.
	var order [memoChains]int
	for i := range order {
		order[i] = i
		for k := i; k > 0 && ids.chains[order[k]].used > ids.chains[order[k-1]].used; k-- {
			order[k], order[k-1] = order[k-1], order[k]
		}
	}
	var (
		c      *chain
		j, l   int
		budget = alignBudget
	)
	for _, i := range order {
		e := &ids.chains[i]
		if len(e.buf) == e.off {
			continue
		}
		ej, el := e.align(msgs, &budget)
		if el > l {
			c, j, l = e, ej, el
			if el == n || el == len(e.msgs())-ej {
				break // msgs is in the window, or continues it
			}
		}
	}
	switch {
	case c != nil && l == n:
		// msgs is a part of the window: nothing to hash or remember.
		c.used, c.prev, c.prevAt = ids.tick, msgs, j
		return c.value(j, j+l), true
	case c != nil && (l == len(c.msgs())-j || 2*l >= len(c.msgs())-j):
		// msgs continues the window from j on, or replaces its end (an
		// edit of the same conversation, most likely): the window
		// becomes msgs.
		c.keep(j, j+l)
	default:
		// A new conversation, or one that shares only a short start
		// with a remembered one.
		return 0, false
	}
	c.used, c.prev, c.prevAt = ids.tick, msgs, 0
	a := newArena(msgs[l:])
	for i := l; i < n; i++ {
		c.push(&msgs[i], messageDigest(&msgs[i]), &a)
	}
	v = c.value(0, n)
	if c.bytes > maxChainBytes {
		c.reset()
	}
	return v, true
}

// fixedEntry is a remembered system prompt and tool set with their digest.
type fixedEntry struct {
	system string
	tools  []provider.ToolDef // a private copy
	sum    uint64
	used   uint64
	set    bool
}

// fixed returns fixedDigest(system, tools), remembered for the system
// prompts and tool sets of the last few requests.
func (ids *idMemo) fixed(system string, tools []provider.ToolDef) uint64 {
	size := len(system)
	for i := range tools {
		size += len(tools[i].Name) + len(tools[i].Description) + len(tools[i].Parameters)
	}
	if size > maxFixedBytes {
		return fixedDigest(system, tools)
	}
	ids.mu.Lock()
	defer ids.mu.Unlock()
	ids.tick++
	lru := &ids.fixes[0]
	for i := range ids.fixes {
		e := &ids.fixes[i]
		if e.set && e.system == system && sameTools(e.tools, tools) {
			e.used = ids.tick
			return e.sum
		}
		if e.used < lru.used {
			lru = e
		}
	}
	// Hashing under the lock keeps the entry and its digest together;
	// it happens once per system prompt and tool set.
	sum := fixedDigest(system, tools)
	clear(lru.tools)
	lru.tools = lru.tools[:0]
	for _, t := range tools {
		t.Parameters = slices.Clone(t.Parameters)
		lru.tools = append(lru.tools, t)
	}
	lru.system, lru.sum, lru.used, lru.set = system, sum, ids.tick, true
	return sum
}

// commonPrefix returns how many messages a and b begin with that are
// equal (sameMessage). Messages with text only, most of a history, are
// compared inline.
func commonPrefix(a, b []provider.Message) int {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	for i := range a {
		x, y := &a[i], &b[i]
		if len(x.ToolCallID)|len(x.ToolName)|len(x.ToolCalls)|len(x.Images)|
			len(y.ToolCallID)|len(y.ToolName)|len(y.ToolCalls)|len(y.Images) == 0 {
			if x.IsError != y.IsError || x.Text != y.Text || !sameRole(x.Role, y.Role) {
				return i
			}
		} else if !sameMessage(x, y) {
			return i
		}
	}
	return n
}

// sameMessage reports whether a and b have the same digest input: equal
// fields, where a nil slice equals an empty one. It runs once per message
// of a warm request, so it compares the lengths first and calls no
// string comparison for the fields most messages leave empty; two strings
// that share their bytes compare in constant time.
func sameMessage(a, b *provider.Message) bool {
	if len(a.Text) != len(b.Text) || a.IsError != b.IsError ||
		len(a.ToolCallID) != len(b.ToolCallID) || len(a.ToolName) != len(b.ToolName) ||
		len(a.ToolCalls) != len(b.ToolCalls) || len(a.Images) != len(b.Images) ||
		a.Role != b.Role || !sameString(a.Text, b.Text) ||
		!sameString(a.ToolCallID, b.ToolCallID) || !sameString(a.ToolName, b.ToolName) {
		return false
	}
	for i := range a.ToolCalls {
		x, y := &a.ToolCalls[i], &b.ToolCalls[i]
		if x.ID != y.ID || x.Name != y.Name || string(x.Arguments) != string(y.Arguments) {
			return false
		}
	}
	for i := range a.Images {
		if a.Images[i] != b.Images[i] {
			return false
		}
	}
	return true
}

// sameRole is a == b, compared inline for the roles the runner sends.
func sameRole(a, b provider.Role) bool {
	if k := roleKind(a); k != 0 {
		return k == roleKind(b)
	}
	return a == b
}

// roleKind numbers the roles of package provider, 0 for any other.
func roleKind(r provider.Role) int {
	switch r {
	case provider.RoleUser:
		return 1
	case provider.RoleAssistant:
		return 2
	case provider.RoleTool:
		return 3
	}
	return 0
}

// sameString is a == b for strings of equal lengths, without a call for
// empty ones.
func sameString(a, b string) bool { return len(a) == 0 || a == b }

func sameTools(a, b []provider.ToolDef) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Name != y.Name || x.Description != y.Description || string(x.Parameters) != string(y.Parameters) {
			return false
		}
	}
	return true
}

// messageBytes is how many bytes of strings and slices m refers to.
func messageBytes(m *provider.Message) int {
	n := len(m.Role) + len(m.Text) + len(m.ToolCallID) + len(m.ToolName)
	for i := range m.ToolCalls {
		n += len(m.ToolCalls[i].ID) + len(m.ToolCalls[i].Name) + len(m.ToolCalls[i].Arguments)
	}
	for i := range m.Images {
		n += len(m.Images[i].MimeType) + len(m.Images[i].Data)
	}
	return n
}

// hasher is a small, fast, deterministic 64-bit hash (not cryptographic),
// reading 8 bytes at a time in little-endian order on every platform.
type hasher struct{ h uint64 }

const (
	mulA = 0x9e3779b97f4a7c15
	mulB = 0xbf58476d1ce4e5b9
	mulC = 0x94d049bb133111eb
)

func (h *hasher) u64(v uint64) {
	h.h = bits.RotateLeft64(h.h^(v*mulA), 27)*mulB + mulC
}

// hashBytes mixes the length and the bytes of s into h; the length prefix
// keeps consecutive fields apart. Long inputs go through four independent
// lanes, which keeps the multiply chains short.
func hashBytes[T ~string | ~[]byte](h *hasher, s T) {
	h.u64(uint64(len(s)))
	hashRaw(h, s)
}

// hashRaw mixes the bytes of s into h without their length (the caller
// has mixed it in); an empty s leaves h as it is.
func hashRaw[T ~string | ~[]byte](h *hasher, s T) {
	if len(s) >= 32 {
		a, b, c, d := h.h, h.h^mulA, h.h^mulB, h.h^mulC
		for ; len(s) >= 32; s = s[32:] {
			a = lane(a, le64(s[0:8]))
			b = lane(b, le64(s[8:16]))
			c = lane(c, le64(s[16:24]))
			d = lane(d, le64(s[24:32]))
		}
		h.u64(a)
		h.u64(b)
		h.u64(c)
		h.u64(d)
	}
	for ; len(s) >= 8; s = s[8:] {
		h.u64(le64(s[:8]))
	}
	if len(s) > 0 {
		var v uint64
		for i := len(s) - 1; i >= 0; i-- {
			v = v<<8 | uint64(s[i])
		}
		h.u64(v)
	}
}

func lane(acc, v uint64) uint64 { return bits.RotateLeft64(acc+v*mulB, 31) * mulA }

// le64 reads 8 bytes in little-endian order.
func le64[T ~string | ~[]byte](s T) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// sum returns the hash with a final avalanche (the splitmix64 finalizer).
func (h *hasher) sum() uint64 {
	z := h.h
	z = (z ^ z>>30) * mulB
	z = (z ^ z>>27) * mulC
	return z ^ z>>31
}
