// Package ctxmap owns the /context map picture: a treemap of what a
// session's next model request is made of (system prompt, tool schemas,
// compaction summary, history), each rectangle's area proportional to its
// size, drawn as a PNG. It is pure drawing: the gateway supplies the sizes.
package ctxmap

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"sort"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Tile is one contributor.
type Tile struct {
	Label string
	// Size is its share (characters or tokens); tiles of size 0 are left out.
	Size int
	// Note is drawn under the label (e.g. "12,345 chars (~3,086 tok)").
	Note string
}

// Size of the picture.
const (
	Width  = 800
	Height = 480
)

var palette = []color.RGBA{
	{0x3b, 0x82, 0xf6, 0xff}, {0x22, 0xa0, 0x6b, 0xff}, {0xd9, 0x77, 0x06, 0xff},
	{0x9b, 0x5d, 0xe5, 0xff}, {0xe1, 0x4d, 0x4d, 0xff}, {0x0e, 0xa5, 0xb5, 0xff},
}

type rect struct{ x, y, w, h float64 }

// PNG draws tiles as a squarified treemap with a title line.
func PNG(title string, tiles []Tile) ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, Width, Height))
	draw.Draw(img, img.Bounds(), &image.Uniform{color.RGBA{0x16, 0x18, 0x1d, 0xff}}, image.Point{}, draw.Src)
	label(img, 8, 16, title, color.White)
	var ts []Tile
	total := 0
	for _, t := range tiles {
		if t.Size > 0 {
			ts = append(ts, t)
			total += t.Size
		}
	}
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].Size > ts[j].Size })
	area := rect{4, 24, Width - 8, Height - 28}
	if total > 0 {
		scale := area.w * area.h / float64(total)
		sizes := make([]float64, len(ts))
		for i, t := range ts {
			sizes[i] = float64(t.Size) * scale
		}
		for i, r := range squarify(sizes, area) {
			c := palette[i%len(palette)]
			box := image.Rect(int(r.x)+1, int(r.y)+1, int(r.x+r.w)-1, int(r.y+r.h)-1)
			draw.Draw(img, box, &image.Uniform{c}, image.Point{}, draw.Src)
			if box.Dx() > 40 && box.Dy() > 18 {
				label(img, box.Min.X+4, box.Min.Y+14, fit(ts[i].Label, box.Dx()), color.White)
				pct := fmt.Sprintf("%.0f%%", 100*float64(ts[i].Size)/float64(total))
				if box.Dy() > 34 {
					label(img, box.Min.X+4, box.Min.Y+28, fit(pct+" - "+ts[i].Note, box.Dx()), color.RGBA{0xee, 0xee, 0xee, 0xff})
				}
			}
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("ctxmap: %w", err)
	}
	return buf.Bytes(), nil
}

// squarify lays out sizes (summing to r's area) in r, rows chosen to keep
// rectangles close to square (Bruls, Huizing and van Wijk).
func squarify(sizes []float64, r rect) []rect {
	out := make([]rect, 0, len(sizes))
	for len(sizes) > 0 {
		short := min(r.w, r.h)
		n := 1
		for n < len(sizes) && worst(sizes[:n+1], short) <= worst(sizes[:n], short) {
			n++
		}
		row := sizes[:n]
		sum := 0.0
		for _, s := range row {
			sum += s
		}
		if r.w >= r.h { // a column on the left
			w := sum / r.h
			y := r.y
			for _, s := range row {
				h := s / w
				out = append(out, rect{r.x, y, w, h})
				y += h
			}
			r = rect{r.x + w, r.y, r.w - w, r.h}
		} else { // a row on top
			h := sum / r.w
			x := r.x
			for _, s := range row {
				w := s / h
				out = append(out, rect{x, r.y, w, h})
				x += w
			}
			r = rect{r.x, r.y + h, r.w, r.h - h}
		}
		sizes = sizes[n:]
	}
	return out
}

// worst is the largest aspect ratio of row laid along a side of length
// short.
func worst(row []float64, short float64) float64 {
	sum, lo, hi := 0.0, row[0], row[0]
	for _, s := range row {
		sum += s
		lo, hi = min(lo, s), max(hi, s)
	}
	if sum == 0 || lo == 0 {
		return 1e18
	}
	s2, w2 := sum*sum, short*short
	return max(w2*hi/s2, s2/(w2*lo))
}

// fit cuts s to what fits in px pixels of the 7-pixel font (ASCII only:
// the font has no other glyphs).
func fit(s string, px int) string {
	n := (px - 8) / 7
	if n <= 0 {
		return ""
	}
	if r := []rune(s); len(r) > n {
		if n <= 3 {
			return ""
		}
		return string(r[:n-3]) + "..."
	}
	return s
}

// label draws s; runes the ASCII font lacks become '?'.
func label(img draw.Image, x, y int, s string, c color.Color) {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, s)
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}
