package memory

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// dotRef is the plain four-sum dot product dot must equal bit for bit.
func dotRef(a, b []float32) float64 {
	var s [4]float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		for k := range 4 {
			s[k] += a[i+k] * b[i+k]
		}
	}
	for ; i < len(a); i++ {
		s[0] += a[i] * b[i]
	}
	return float64(s[0] + s[1] + s[2] + s[3])
}

func TestDotMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{0, 1, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 31, 1536, 1537} {
		a, b := make([]float32, n), make([]float32, n)
		for i := range a {
			a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		if got, want := dot(a, b), dotRef(a, b); got != want {
			t.Errorf("n=%d: dot = %v, want %v", n, got, want)
		}
		c := make([]float32, n)
		for i := range c {
			c[i] = float32(r.NormFloat64())
		}
		ga, gc := dot2(a, c, b)
		if float64(ga) != dotRef(a, b) || float64(gc) != dotRef(c, b) {
			t.Errorf("n=%d: dot2 = %v, %v, want %v, %v", n, ga, gc, dotRef(a, b), dotRef(c, b))
		}
	}
}

// TestTopSimilarMatchesSort checks the heap selection and the parallel
// scan against sorting every similarity: same chunks, same order, ties
// (duplicated vectors) in index order, vectors of another length left out.
func TestTopSimilarMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	const dims = 16
	vec := func() []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return normalize(v)
	}
	for _, n := range []int{0, 1, 5, 199, 200, 201, 3*scanShard + 17} {
		vecs := make([][]float32, n)
		for i := range vecs {
			switch {
			case i%10 == 3 && i > 0:
				vecs[i] = vecs[i-1] // a tie
			case i%17 == 5:
				vecs[i] = make([]float32, dims-1) // another model's length
			default:
				vecs[i] = vec()
			}
		}
		q := vec()
		var want []scored
		for i, v := range vecs {
			if len(v) == dims {
				want = append(want, scored{i, dotRef(v, q)})
			}
		}
		slices.SortFunc(want, func(a, b scored) int {
			if a.sim != b.sim {
				if a.sim > b.sim {
					return -1
				}
				return 1
			}
			return a.i - b.i
		})
		for _, k := range []int{1, 6, 200} {
			got := topSimilar(pack(vecs), q, k)
			w := want[:min(k, len(want))]
			if !slices.Equal(got, w) && len(got)+len(w) > 0 {
				t.Fatalf("n=%d k=%d: got %v, want %v", n, k, got, w)
			}
		}
	}
}

func BenchmarkDot2x1536(b *testing.B) {
	x, y, q := make([]float32, 1536), make([]float32, 1536), make([]float32, 1536)
	for i := range x {
		x[i], y[i], q[i] = float32(i%7), float32(i%5), float32(i%3)
	}
	for b.Loop() {
		dot2(x, y, q)
	}
}
