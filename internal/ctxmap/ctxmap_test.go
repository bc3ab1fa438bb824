package ctxmap

import (
	"bytes"
	"image/png"
	"math"
	"testing"
)

func TestSquarifyCoversTheArea(t *testing.T) {
	for _, sizes := range [][]float64{{6, 6, 4, 3, 2, 2, 1}, {1}, {5, 1}, {1, 1, 1, 1}} {
		r := rect{0, 0, 6, 4}
		sum := 0.0
		for _, s := range sizes {
			sum += s
		}
		scaled := make([]float64, len(sizes))
		for i, s := range sizes {
			scaled[i] = s * 24 / sum
		}
		got := squarify(scaled, r)
		if len(got) != len(sizes) {
			t.Fatalf("%v: %d rects", sizes, len(got))
		}
		area := 0.0
		for i, g := range got {
			if math.Abs(g.w*g.h-scaled[i]) > 1e-9 || g.x < -1e-9 || g.y < -1e-9 || g.x+g.w > 6+1e-9 || g.y+g.h > 4+1e-9 {
				t.Errorf("%v: rect %d = %+v for area %v", sizes, i, g, scaled[i])
			}
			area += g.w * g.h
		}
		if math.Abs(area-24) > 1e-9 {
			t.Errorf("%v: areas sum to %v", sizes, area)
		}
	}
}

func TestPNG(t *testing.T) {
	b, err := PNG("Context of agent:main:main", []Tile{
		{Label: "History", Size: 40000, Note: "40,000 chars"}, {Label: "Tool schemas", Size: 9000},
		{Label: "System prompt", Size: 3000}, {Label: "Summary", Size: 0},
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil || img.Bounds().Dx() != Width || img.Bounds().Dy() != Height {
		t.Fatalf("decode: %v %v", err, img)
	}
	if _, err := PNG("empty", nil); err != nil {
		t.Fatal(err)
	}
}
