package store

import (
	"context"
	"errors"
)

// ErrFenced: a write carried a Fence whose claim no longer holds (the
// node lost its lease, or another node claimed the lane since). Nothing
// was written; the writer drops the write and logs it, it never retries.
var ErrFenced = errors.New("fenced: the lane's claim is no longer this node's")

// Fence is the claim a gateway node holds on a session's lane when several
// nodes share one store: the node's id, the session and the claim's epoch
// (every claim of a lane gets a new, larger one). A node's writes for a
// lane or its runs carry it (WithFence); a backend shared by nodes refuses
// such a write with ErrFenced in the transaction that would apply it,
// under a lock that an adoption or a new claim of the lane waits for, when
// the claim is no longer that node's: a write never lands after the lane
// moved. A backend used by one gateway only (sqlite) has no claims and
// accepts every fenced write.
type Fence struct {
	Node       string
	SessionKey string
	Epoch      int64
}

// IsZero reports whether f is no fence (a single gateway's write).
func (f Fence) IsZero() bool { return f == Fence{} }

type fenceKey struct{}

// WithFence returns ctx carrying f: the store writes made with it are
// fenced by f. A zero f returns ctx unchanged.
func WithFence(ctx context.Context, f Fence) context.Context {
	if f.IsZero() {
		return ctx
	}
	return context.WithValue(ctx, fenceKey{}, f)
}

// FenceOf returns the fence ctx carries, and whether it carries one.
func FenceOf(ctx context.Context) (Fence, bool) {
	f, ok := ctx.Value(fenceKey{}).(Fence)
	return f, ok
}
