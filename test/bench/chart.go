package bench

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// ErrNoRatio: no row has figures of both systems, so there is nothing to
// chart (a run against tenure alone).
var ErrNoRatio = errors.New("no workload has a ratio of tenure to etcd")

// Colours of the bars where tenure is better and where it is worse.
var (
	betterColor = color.RGBA{R: 0x22, G: 0xaa, B: 0x77, A: 0xff}
	worseColor  = color.RGBA{R: 0xdd, G: 0x55, B: 0x44, A: 0xff}
)

// Advantage is tenure's advantage over etcd in the row: its ratio where
// higher is better, the inverse where lower is better, so that above 1
// always means tenure did better; 0 when the row has no ratio.
func (r *Row) Advantage() float64 {
	x := r.Ratio()
	if x == 0 || r.HigherBetter {
		return x
	}
	return 1 / x
}

// WriteChart draws tenure's advantage per workload as horizontal bars from
// 1× on a log₂ axis (green to the right where tenure is better, red to the
// left where it is worse), each bar labelled with its value, in the order
// of rows from the top, and writes it to w in format ("svg" or "png").
// Rows without a ratio are left out; ErrNoRatio if none has one.
func WriteChart(w io.Writer, rows []*Row, title, format string) error {
	var shown []*Row
	for _, r := range rows {
		if r.Advantage() > 0 {
			shown = append(shown, r)
		}
	}
	if len(shown) == 0 {
		return ErrNoRatio
	}
	const rowHeight, barWidth = 0.32 * vg.Inch, 0.22 * vg.Inch
	n := len(shown)
	// The first row is drawn at the top: y = n-1 for it, 0 for the last.
	better, worse := make(plotter.Values, n), make(plotter.Values, n)
	names := make([]string, n)
	var right, left plotter.XYLabels
	span := 2.0 // the axis runs from 1/2^span to 2^span
	for i, r := range shown {
		y := n - 1 - i
		names[y] = r.Name
		adv := r.Advantage()
		l := math.Log2(adv)
		span = max(span, math.Ceil(math.Abs(l)))
		side, bars := &right, better
		if adv < 1 {
			side, bars = &left, worse
		}
		bars[y] = l
		side.XYs = append(side.XYs, plotter.XY{X: l, Y: float64(y)})
		side.Labels = append(side.Labels, fmt.Sprintf("%.2f×", adv))
	}

	p := plot.New()
	p.Title.Text = title
	p.Title.Padding = 0.1 * vg.Inch
	p.X.Label.Text = "tenure's advantage over etcd (log scale; right of 1×: tenure better)"
	p.X.Min, p.X.Max = -span, span
	p.X.Tick.Marker = log2Ticks{}
	p.NominalY(names...)
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4

	grid := plotter.NewGrid()
	grid.Horizontal.Width = 0
	p.Add(grid)
	for _, bars := range []struct {
		vs plotter.Values
		c  color.Color
	}{{better, betterColor}, {worse, worseColor}} {
		b, err := plotter.NewBarChart(bars.vs, barWidth)
		if err != nil {
			return err
		}
		b.Horizontal, b.Color, b.LineStyle.Width = true, bars.c, 0
		p.Add(b)
	}
	one, err := plotter.NewLine(plotter.XYs{{X: 0, Y: p.Y.Min}, {X: 0, Y: p.Y.Max}})
	if err != nil {
		return err
	}
	one.Width = vg.Points(1.2)
	p.Add(one)
	for _, side := range []struct {
		l     plotter.XYLabels
		align text.XAlignment
		dx    vg.Length
	}{{right, text.XLeft, 4}, {left, text.XRight, -4}} {
		if len(side.l.Labels) == 0 {
			continue
		}
		ls, err := plotter.NewLabels(side.l)
		if err != nil {
			return err
		}
		for i := range ls.TextStyle {
			ls.TextStyle[i].XAlign, ls.TextStyle[i].YAlign = side.align, text.YCenter
		}
		ls.Offset = vg.Point{X: side.dx}
		p.Add(ls)
	}

	c, err := draw.NewFormattedCanvas(8*vg.Inch, vg.Length(n)*rowHeight+1.2*vg.Inch, format)
	if err != nil {
		return err
	}
	const margin = 0.15 * vg.Inch
	p.Draw(draw.Crop(draw.New(c), margin, -margin, margin, -margin))
	_, err = c.WriteTo(w)
	return err
}

// log2Ticks marks the powers of 2 of a log₂ axis as multiples: 1/4×, 1/2×,
// 1×, 2×, 4×; every other one when there are more than 9.
type log2Ticks struct{}

// Ticks implements plot.Ticker.
func (log2Ticks) Ticks(lo, hi float64) []plot.Tick {
	from, to := int(math.Ceil(lo)), int(math.Floor(hi))
	step := 1
	if to-from > 8 {
		step = 2
	}
	var ts []plot.Tick
	for k := from; k <= to; k++ {
		t := plot.Tick{Value: float64(k)}
		if k%step == 0 {
			t.Label = multiple(k)
		}
		ts = append(ts, t)
	}
	return ts
}

// multiple is 2^k written as a multiple: "8×", "1×", "1/8×".
func multiple(k int) string {
	if k < 0 {
		return fmt.Sprintf("1/%.0f×", math.Exp2(float64(-k)))
	}
	return fmt.Sprintf("%.0f×", math.Exp2(float64(k)))
}
