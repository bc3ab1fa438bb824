package memory

import (
	"slices"
	"sync"

	"github.com/switchboardhq/switchboard/internal/procs"
)

// scored is a chunk's similarity to a query.
type scored struct {
	i   int
	sim float64
}

// better orders similarities best first, ties in chunk order.
func better(a, b scored) bool {
	return a.sim > b.sim || a.sim == b.sim && a.i < b.i
}

// scanShard is the fewest vectors worth a goroutine of their own.
const scanShard = 2048

// topSimilar returns the k vectors of vecs most similar to the unit vector
// q, best first (ties in index order); vectors of another length than q
// are left out. The dot products are spread over procs.Parallelism goroutines,
// the best k kept in a bounded heap rather than sorting them all.
func topSimilar(vecs [][]float32, q []float32, k int) []scored {
	sims := make([]float32, len(vecs))
	workers := min(procs.Parallelism(), len(vecs)/scanShard)
	if workers <= 1 {
		similarities(vecs, q, sims)
	} else {
		var wg sync.WaitGroup
		per := (len(vecs) + workers - 1) / workers
		for lo := 0; lo < len(vecs); lo += per {
			hi := min(lo+per, len(vecs))
			wg.Go(func() { similarities(vecs[lo:hi], q, sims[lo:hi]) })
		}
		wg.Wait()
	}
	if k <= 0 {
		return nil
	}
	// h is a heap of the best k so far, the worst of them at its root.
	h := make([]scored, 0, min(k, len(vecs)))
	for i, v := range vecs {
		if len(v) != len(q) {
			continue
		}
		s := scored{i, float64(sims[i])}
		switch {
		case len(h) < k:
			h = append(h, s)
			siftUp(h, len(h)-1)
		case better(s, h[0]):
			h[0] = s
			siftDown(h, 0)
		}
	}
	slices.SortFunc(h, func(a, b scored) int {
		if better(a, b) {
			return -1
		}
		return 1
	})
	return h
}

// similarities sets sims[i] to the dot product of vecs[i] and q (0 for a
// vector of another length).
func similarities(vecs [][]float32, q []float32, sims []float32) {
	i := 0
	for ; i+1 < len(vecs); i += 2 {
		if len(vecs[i]) == len(q) && len(vecs[i+1]) == len(q) {
			sims[i], sims[i+1] = dot2(vecs[i], vecs[i+1], q)
			continue
		}
		sims[i], sims[i+1] = sim(vecs[i], q), sim(vecs[i+1], q)
	}
	if i < len(vecs) {
		sims[i] = sim(vecs[i], q)
	}
}

// sim is dot(v, q) for a vector of q's length, else 0; dot's value is a
// float32 sum, kept exactly.
func sim(v, q []float32) float32 {
	if len(v) != len(q) {
		return 0
	}
	return float32(dot(v, q))
}

// dot2 is dot(a, q) and dot(b, q) for a, b and q of one length, computed
// side by side: the same sums in the same order as dot, so the same
// values, with twice the independent additions in flight.
func dot2(a, b, q []float32) (float32, float32) {
	n := len(q)
	a, b = a[:n], b[:n]
	var a0, a1, a2, a3, b0, b1, b2, b3 float32
	i := 0
	for ; i+4 <= n; i += 4 {
		a0 += a[i] * q[i]
		b0 += b[i] * q[i]
		a1 += a[i+1] * q[i+1]
		b1 += b[i+1] * q[i+1]
		a2 += a[i+2] * q[i+2]
		b2 += b[i+2] * q[i+2]
		a3 += a[i+3] * q[i+3]
		b3 += b[i+3] * q[i+3]
	}
	for ; i < n; i++ {
		a0 += a[i] * q[i]
		b0 += b[i] * q[i]
	}
	return a0 + a1 + a2 + a3, b0 + b1 + b2 + b3
}

// siftUp restores the heap h (worst at the root) after h[i] was added.
func siftUp(h []scored, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !better(h[p], h[i]) {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

// siftDown restores the heap h (worst at the root) after h[i] was replaced.
func siftDown(h []scored, i int) {
	for {
		w, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && better(h[w], h[l]) {
			w = l
		}
		if r < len(h) && better(h[w], h[r]) {
			w = r
		}
		if w == i {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}
