// Package outbound sends messages to remote A2A peers at their configured
// JSON-RPC URL with their outbound token. A send that waits for the reply
// uses SendStreamingMessage, so the final task arrives as soon as the peer
// has it; a peer that does not stream (the reference refuses the method)
// is remembered and gets SendMessage with returnImmediately, then GetTask
// until the task is final or the caller's wait ends. One remote contextId
// is derived per (peer, sender session), so a sender's turns form one
// conversation on the remote side.
//
// The protocol version comes from the peer's agent card (read from its
// URL's origin at /.well-known/agent-card.json, then agent.json, and kept
// for CardTTL): 1.0 when the card declares a 1.x JSON-RPC interface, 0.3
// when it declares only 0.x ones (then the methods, parts and results take
// their 0.3 names and kinds), 1.0 when there is no readable card. Every
// request says its version in the A2A-Version header, and goes to the URL
// the card declares for the chosen interface (resolved against the
// configured URL when relative; an interface URL that is not http or
// https is refused), or to the configured URL when the card names none.
package outbound

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/a2a/wire"
)

// Peer is a remote peer we can send to.
type Peer struct {
	Name  string
	URL   string // the peer's JSON-RPC endpoint
	Token string // bearer token we present; "" for none
}

// Client sends to the configured peers. It is safe for concurrent use.
type Client struct {
	peers map[string]Peer
	http  *http.Client
	// streams is http without its overall timeout: a stream lasts as long
	// as the caller's wait.
	streams *http.Client
	seq     atomic.Int64
	// poll is the first GetTask interval; it doubles up to a second.
	poll time.Duration
	// noStream holds the names of the peers that refused
	// SendStreamingMessage.
	noStream sync.Map
	// versions holds each peer's interface as its card declared it (a
	// cardVersion by peer name).
	versions sync.Map
	now      func() time.Time
}

// CardTTL is how long a peer's protocol version and interface URL, read
// from its card, are kept before the card is read again.
const CardTTL = 5 * time.Minute

// cardVersion is a peer's protocol version and endpoint (or why its
// card's endpoint is refused), and when its card was read.
type cardVersion struct {
	version string
	url     string
	err     error
	read    time.Time
}

// New returns a client for peers (those without a URL are left out).
// httpClient nil means a client with a 30 s per-request timeout; streams
// use it without that timeout, bounded by the caller's wait instead.
func New(peers []Peer, httpClient *http.Client) *Client {
	if httpClient == nil {
		httpClient = &http.Client{Timeout: 30 * time.Second}
	}
	streams := *httpClient
	streams.Timeout = 0
	c := &Client{peers: map[string]Peer{}, http: httpClient, streams: &streams, poll: 50 * time.Millisecond, now: time.Now}
	for _, p := range peers {
		if p.URL != "" {
			c.peers[p.Name] = p
		}
	}
	return c
}

// ErrUnknownPeer is the error for a peer without an outbound URL.
var ErrUnknownPeer = errors.New("no A2A peer with an outbound url")

// Has reports whether peer can be sent to.
func (c *Client) Has(peer string) bool { _, ok := c.peers[peer]; return ok }

// ContextID is the remote contextId of sender session sourceKey's
// conversation with peer: stable, and revealing nothing of the key.
func ContextID(peer, sourceKey string) string {
	sum := sha256.Sum256([]byte(peer + "\x00" + sourceKey))
	return "sb-" + hex.EncodeToString(sum[:16])
}

// Request is one message to a peer.
type Request struct {
	Peer string
	// SourceKey is the sender session; it picks the remote contextId.
	SourceKey string
	Text      string
	// Metadata goes out as the message's metadata (nil: none).
	Metadata map[string]any
	// MessageID is the message's id ("": a new one); a retried send
	// reuses it.
	MessageID string
	// Wait is how long Send waits for the task to become final (0: not
	// at all).
	Wait time.Duration
}

// Send sends r.Text to r.Peer as sender session r.SourceKey and waits up
// to r.Wait for the task to become final. It returns the task as last
// seen: final, or still working when the wait ended. When ctx ends first
// (the sender's run was aborted), the peer's task is canceled (CancelTask,
// tasks/cancel in 0.3) before Send returns ctx's error.
func (c *Client) Send(ctx context.Context, r Request) (*wire.Task, error) {
	peer, wait := r.Peer, r.Wait
	p, ok := c.peers[peer]
	if !ok {
		return nil, fmt.Errorf("a2a peer %q: %w", peer, ErrUnknownPeer)
	}
	params := wire.SendParams{
		Message: wire.Message{MessageID: cmp.Or(r.MessageID, uuid.NewString()), ContextID: ContextID(peer, r.SourceKey), Role: wire.RoleUser,
			Parts: []wire.Part{wire.TextPart(r.Text)}, Metadata: r.Metadata},
	}
	p, v, err := c.resolve(ctx, p)
	if err != nil {
		return nil, err
	}
	if _, refused := c.noStream.Load(peer); wait > 0 && !refused {
		t, err := c.stream(ctx, p, v, params, wait)
		if !errors.Is(err, errNoStreaming) {
			return c.abandon(ctx, p, v, t, err)
		}
		c.noStream.Store(peer, true)
	}
	params.Configuration = &wire.SendConfiguration{ReturnImmediately: true}
	raw, err := c.call(ctx, p, v, wire.MethodSendMessage, wire.EncodeSendParams(v, params))
	if err != nil {
		return nil, err
	}
	res, err := wire.DecodeStreamEvent(v, raw)
	switch {
	case err != nil:
		return nil, fmt.Errorf("a2a peer %q: SendMessage: bad result: %w", peer, err)
	case res.Task != nil && wait <= 0: // nobody waits: the task is followed elsewhere
		return res.Task, nil
	case res.Task != nil:
		t, err := c.Wait(ctx, peer, res.Task, wait)
		return c.abandon(ctx, p, v, t, err)
	case res.Message != nil: // a peer may answer with a message and no task
		return apply(nil, res), nil
	}
	return nil, fmt.Errorf("a2a peer %q: SendMessage answered without a task", peer)
}

// cancelTimeout bounds the CancelTask request sent for an abandoned task.
const cancelTimeout = 10 * time.Second

// abandon passes on Send's outcome t, err; when the caller's ctx ended
// while t was still running at the peer, it first asks the peer to cancel
// t (nobody waits for its reply any more) and returns the task as the
// cancel left it, with ctx's error (joined with the cancel's failure).
func (c *Client) abandon(ctx context.Context, p Peer, v string, t *wire.Task, err error) (*wire.Task, error) {
	if ctx.Err() == nil || t == nil || t.ID == "" || wire.Terminal(t.Status.State) {
		return t, err
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	canceled, cerr := c.cancel(cctx, p, v, t.ID)
	if cerr != nil {
		return t, errors.Join(cmp.Or(err, ctx.Err()), cerr)
	}
	return canceled, cmp.Or(err, ctx.Err())
}

// cancel sends CancelTask for task id to p (resolved) in version v.
func (c *Client) cancel(ctx context.Context, p Peer, v, id string) (*wire.Task, error) {
	raw, err := c.call(ctx, p, v, wire.MethodCancelTask, wire.TaskParams{ID: id})
	if err != nil {
		return nil, err
	}
	t, err := wire.DecodeTaskResult(v, raw)
	if err != nil {
		return nil, fmt.Errorf("a2a peer %q: CancelTask: bad result: %w", p.Name, err)
	}
	return t, nil
}

// resolve returns p with the URL its card declares for the chosen
// interface, and that interface's protocol version, reading the card when
// it was not read within CardTTL. A card that cannot be read or declares
// no usable interface means 1.0 at the configured URL.
func (c *Client) resolve(ctx context.Context, p Peer) (Peer, string, error) {
	cv, ok := c.versions.Load(p.Name)
	if !ok || c.now().Sub(cv.(cardVersion).read) >= CardTTL {
		read := cardVersion{version: wire.Version10, url: p.URL, read: c.now()}
		if card, err := c.card(ctx, p); err == nil {
			if i, ok := wire.ChooseInterface(card); ok {
				read.version = i.Version
				read.url, read.err = interfaceURL(p, i.URL)
			}
		}
		c.versions.Store(p.Name, read)
		cv = read
	}
	p.URL = cv.(cardVersion).url
	return p, cv.(cardVersion).version, cv.(cardVersion).err
}

// interfaceURL is the endpoint of p's card interface declared at ref: ref
// resolved against p's configured URL ("" is the configured URL). Only
// http and https endpoints are accepted.
func interfaceURL(p Peer, ref string) (string, error) {
	if ref == "" {
		return p.URL, nil
	}
	base, err := url.Parse(p.URL)
	if err != nil {
		return "", fmt.Errorf("a2a peer %q: configured url: %w", p.Name, err)
	}
	u, err := base.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("a2a peer %q: the card's interface url %q: %w", p.Name, ref, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("a2a peer %q: the card's interface url %q is not an http(s) url", p.Name, ref)
	}
	return u.String(), nil
}

// card reads p's agent card from its URL's origin: the 1.0 well-known
// path, then the older agent.json.
func (c *Client) card(ctx context.Context, p Peer) ([]byte, error) {
	u, err := url.Parse(p.URL)
	if err != nil {
		return nil, fmt.Errorf("a2a peer %q: card: %w", p.Name, err)
	}
	var last error
	for _, path := range []string{"/.well-known/agent-card.json", "/.well-known/agent.json"} {
		card := url.URL{Scheme: u.Scheme, Host: u.Host, Path: path}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, card.String(), nil)
		if err != nil {
			return nil, fmt.Errorf("a2a peer %q: card: %w", p.Name, err)
		}
		req.Header.Set("Accept", "application/json")
		// Asking for 1.0 gets a card that speaks both versions in its 1.0
		// form, and a 0.3-only card as it is.
		req.Header.Set(wire.VersionHeader, wire.Version10)
		if p.Token != "" {
			req.Header.Set("Authorization", "Bearer "+p.Token)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, fmt.Errorf("a2a peer %q: card: %w", p.Name, err)
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, wire.MaxResponseBytes))
		resp.Body.Close()
		if err == nil && resp.StatusCode == http.StatusOK {
			return b, nil
		}
		last = fmt.Errorf("a2a peer %q: card %s: HTTP %d", p.Name, path, resp.StatusCode)
	}
	return nil, last
}

// Wait polls peer's task t with GetTask until it is final or wait ends,
// and returns it as last seen.
func (c *Client) Wait(ctx context.Context, peer string, t *wire.Task, wait time.Duration) (*wire.Task, error) {
	p, ok := c.peers[peer]
	if !ok {
		return t, fmt.Errorf("a2a peer %q: %w", peer, ErrUnknownPeer)
	}
	if wait <= 0 || wire.Terminal(t.Status.State) {
		return t, nil
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	interval := c.poll
	p, v, err := c.resolve(ctx, p)
	if err != nil {
		return t, err
	}
	failed := 0 // transient GetTask failures in a row
	for {
		select {
		case <-ctx.Done():
			return t, ctx.Err()
		case <-deadline.C:
			return t, nil
		case <-time.After(interval):
		}
		interval = min(2*interval, time.Second)
		raw, err := c.call(ctx, p, v, wire.MethodGetTask, wire.TaskParams{ID: t.ID})
		if err != nil {
			// A poll only reads the task: a connection reset or a 5xx is
			// tried again (the task goes on at the peer) until the wait
			// ends or the peer stays unreachable for several polls.
			if failed++; Transient(err) && failed < maxPollFailures {
				continue
			}
			return t, err
		}
		failed = 0
		cur, err := wire.DecodeTaskResult(v, raw)
		if err != nil {
			return t, fmt.Errorf("a2a peer %q: GetTask: bad result: %w", peer, err)
		}
		t = cur
		if wire.Terminal(t.Status.State) {
			return t, nil
		}
	}
}

// maxPollFailures is how many GetTask polls in a row may fail with a
// transport error before Wait gives up.
const maxPollFailures = 5

// transportError is a failure to reach the peer or a server-side HTTP
// error (5xx, 408, 429): retrying later may succeed.
type transportError struct{ err error }

func (e transportError) Error() string { return e.err.Error() }
func (e transportError) Unwrap() error { return e.err }

// Transient reports whether err (from Send or Wait) is a transport error
// that a later retry may overcome, rather than a refusal (a wrong token,
// a JSON-RPC error, an unknown peer) that retrying cannot fix.
func Transient(err error) bool {
	var t transportError
	return errors.As(err, &t)
}

// post sends one JSON-RPC request to p with hc, in protocol version v
// (the method's name for it and the A2A-Version header). A response other
// than HTTP 200 is closed and returned as an error.
func (c *Client) post(ctx context.Context, hc *http.Client, p Peer, v string, m wire.Method, params any) (*http.Response, error) {
	method := string(m)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.seq.Add(1), "method": wire.MethodName(v, m), "params": params})
	if err != nil {
		return nil, fmt.Errorf("a2a peer %q: %s: %w", p.Name, method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("a2a peer %q: %s: %w", p.Name, method, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(wire.VersionHeader, v)
	if m == wire.MethodGetTask || m == wire.MethodCancelTask {
		// Reading or cancelling a task twice is harmless: marked
		// idempotent (an empty key is not sent), the transport sends it
		// again on a fresh connection when the peer closed the reused
		// one as the request went out (an idle keep-alive race).
		req.Header["Idempotency-Key"] = nil
	}
	if p.Token != "" {
		req.Header.Set("Authorization", "Bearer "+p.Token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, transportError{fmt.Errorf("a2a peer %q: %s: %w", p.Name, method, err)}
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		err := fmt.Errorf("a2a peer %q: %s: HTTP %d", p.Name, method, resp.StatusCode)
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests {
			return nil, transportError{err}
		}
		return nil, err
	}
	return resp, nil
}

// rpcResponse is a JSON-RPC response as read.
type rpcResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *wire.Error     `json:"error"`
}

// call makes one JSON-RPC call to p in protocol version v and returns its
// result.
func (c *Client) call(ctx context.Context, p Peer, v string, m wire.Method, params any) (json.RawMessage, error) {
	method := string(m)
	resp, err := c.post(ctx, c.http, p, v, m, params)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, wire.MaxResponseBytes+1))
	if err != nil {
		return nil, transportError{fmt.Errorf("a2a peer %q: %s: %w", p.Name, method, err)}
	}
	if len(b) > wire.MaxResponseBytes {
		return nil, fmt.Errorf("a2a peer %q: %s: response exceeds 1 MiB", p.Name, method)
	}
	var r rpcResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("a2a peer %q: %s: bad JSON-RPC response: %w", p.Name, method, err)
	}
	if r.Error != nil {
		return nil, fmt.Errorf("a2a peer %q: %s: %d %s", p.Name, method, r.Error.Code, r.Error.Message)
	}
	return r.Result, nil
}
