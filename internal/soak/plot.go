package soak

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// plot is a small SVG chart: lines or dots over a time axis in minutes.
type plot struct {
	Title, YLabel string
	XMax          float64 // minutes
	Series        []plotSeries
	// Marks are drawn as ticks under the x axis (the faults).
	Marks []plotMark
	// Legend lists names and colors under the chart (the marks' kinds).
	Legend []plotSeries
}

// plotSeries is one line (points joined, NaN breaks the line) or one set
// of dots.
type plotSeries struct {
	Name   string
	Color  string
	Dots   bool
	Points [][2]float64 // minutes, value
}

type plotMark struct {
	X     float64
	Color string
}

const (
	plotW, plotH                       = 900, 330
	padLeft, padRight, padTop, padBott = 70, 20, 34, 66
)

// niceStep returns a round step that cuts span into about n parts.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

// write renders the chart as SVG.
func (p plot) write(w io.Writer) error {
	ymax := 0.0
	for _, s := range p.Series {
		for _, pt := range s.Points {
			if !math.IsNaN(pt[1]) {
				ymax = math.Max(ymax, pt[1])
			}
		}
	}
	ystep := niceStep(ymax, 5)
	ytop := math.Max(ystep, math.Ceil(ymax/ystep)*ystep)
	xmax := math.Max(p.XMax, 1e-9)
	xstep := niceStep(xmax, 10)
	iw, ih := float64(plotW-padLeft-padRight), float64(plotH-padTop-padBott)
	x := func(v float64) float64 { return padLeft + v/xmax*iw }
	y := func(v float64) float64 { return padTop + ih - v/ytop*ih }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", plotW, plotH, plotW, plotH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", plotW, plotH)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", padLeft, html.EscapeString(p.Title))
	for v := 0.0; v <= ytop+ystep/2; v += ystep {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e4e4e4"/>`+"\n", padLeft, plotW-padRight, y(v), y(v))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", padLeft-6, y(v)+4, formatTick(v))
	}
	for v := 0.0; v <= xmax+xstep/2; v += xstep {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#f0f0f0"/>`+"\n", x(v), x(v), padTop, plotH-padBott)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(v), plotH-padBott+16, formatTick(v))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">minutes into the faults</text>`+"\n", padLeft+int(iw/2), plotH-padBott+32)
	fmt.Fprintf(&b, `<text transform="translate(16,%d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", padTop+int(ih/2), html.EscapeString(p.YLabel))
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#888"/>`+"\n", padLeft, padTop, iw, ih)
	for _, m := range p.Marks {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", x(m.X), x(m.X), plotH-padBott, plotH-padBott+6, m.Color)
	}
	for _, s := range p.Series {
		if s.Dots {
			for _, pt := range s.Points {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`+"\n", x(pt[0]), y(pt[1]), s.Color)
			}
			continue
		}
		var seg []string
		flush := func() {
			if len(seg) > 0 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", s.Color, strings.Join(seg, " "))
			}
			seg = seg[:0]
		}
		for _, pt := range s.Points {
			if math.IsNaN(pt[1]) {
				flush()
				continue
			}
			seg = append(seg, fmt.Sprintf("%.1f,%.1f", x(pt[0]), y(pt[1])))
		}
		flush()
	}
	// The legend: the series, then the marks' kinds.
	lx, ly := float64(padLeft), float64(plotH-12)
	for _, s := range append(append([]plotSeries(nil), p.Series...), p.Legend...) {
		if s.Name == "" {
			continue
		}
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="10" height="10" fill="%s"/>`+"\n", lx, ly-9, s.Color)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text>`+"\n", lx+14, ly, html.EscapeString(s.Name))
		lx += 24 + 6.5*float64(len(s.Name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func formatTick(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%g", math.Round(v*100)/100)
}

// kindColors are the faults' colors in the charts.
var kindColors = map[FaultKind]string{
	FaultKill:             "#d62728",
	FaultAPIServerRestart: "#1f77b4",
	FaultCompact:          "#9467bd",
	FaultStreamCut:        "#ff7f0e",
	FaultStreamStall:      "#8c564b",
	FaultStreamTruncate:   "#e377c2",
	FaultDiskFull:         "#2ca02c",
	FaultPageDamage:       "#17becf",
}

func kindColor(k FaultKind) string {
	if c, ok := kindColors[k]; ok {
		return c
	}
	return "#7f7f7f"
}
