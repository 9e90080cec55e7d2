package dashboard

import (
	"fmt"
	"html/template"
	"strings"
	"time"
)

// The charts are inline SVG written on the server: no script, no
// library, and they print and screenshot as they show.

const (
	chartW, chartH = 720, 160
	chartPad       = 28
)

// barChart draws counts as bars, labelled every labelEvery bars with
// label(i).
func barChart(title string, counts []int, label func(i int) string, labelEvery int) template.HTML {
	peak := 1
	total := 0
	for _, c := range counts {
		peak = max(peak, c)
		total += c
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" role="img" viewBox="0 0 %d %d" aria-label="%s">`, chartW, chartH+chartPad, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<title>%s: %d in all, at most %d a bar</title>`, template.HTMLEscapeString(title), total, peak)
	slot := float64(chartW-chartPad) / float64(max(len(counts), 1))
	for i, c := range counts {
		h := float64(chartH-10) * float64(c) / float64(peak)
		x := float64(chartPad) + float64(i)*slot
		fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s: %d</title></rect>`,
			x+1, float64(chartH)-h, slot-2, h, template.HTMLEscapeString(label(i)), c)
		if labelEvery > 0 && i%labelEvery == 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`, x+1, chartH+16, template.HTMLEscapeString(label(i)))
		}
	}
	fmt.Fprintf(&b, `<text x="0" y="12">%d</text><line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/></svg>`, peak, chartPad, chartH, chartW, chartH)
	return template.HTML(b.String())
}

// lagChart draws the lag samples as two lines, ticker and to-do lists,
// over the time they cover.
func lagChart(samples []LagSample, loc *time.Location) template.HTML {
	if len(samples) < 2 {
		return template.HTML(`<p class="empty">The lag chart fills as this process samples the lag (every sampling period, kept in memory).</p>`)
	}
	peak := 1.0
	for _, s := range samples {
		peak = max(peak, s.TickerSeconds, s.ListSeconds)
	}
	from, to := samples[0].At.Time, samples[len(samples)-1].At.Time
	span := max(to.Sub(from).Seconds(), 1)
	line := func(v func(LagSample) float64) string {
		var pts []string
		for _, s := range samples {
			x := float64(chartPad) + float64(chartW-chartPad)*s.At.Sub(from).Seconds()/span
			y := float64(chartH) - float64(chartH-10)*v(s)/peak
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		}
		return strings.Join(pts, " ")
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" role="img" viewBox="0 0 %d %d" aria-label="lag over time">`, chartW, chartH+chartPad)
	fmt.Fprintf(&b, `<title>lag over time, %d samples, peak %s</title>`, len(samples), time.Duration(peak*float64(time.Second)).Round(time.Second))
	fmt.Fprintf(&b, `<polyline class="line ticker" points="%s"/>`, line(func(s LagSample) float64 { return s.TickerSeconds }))
	fmt.Fprintf(&b, `<polyline class="line lists" points="%s"/>`, line(func(s LagSample) float64 { return s.ListSeconds }))
	fmt.Fprintf(&b, `<text x="0" y="12">%s</text>`, time.Duration(peak*float64(time.Second)).Round(time.Second))
	fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text><text x="%d" y="%d" text-anchor="end">%s</text>`,
		chartPad, chartH+16, from.In(loc).Format("15:04:05"), chartW, chartH+16, to.In(loc).Format("15:04:05"))
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/></svg>`, chartPad, chartH, chartW, chartH)
	return template.HTML(b.String())
}
