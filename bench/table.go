package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// row is one line of the table: a throughput and what it is compared with.
type row struct {
	scenario, impl string
	n              int
	perSec         float64 // throughput; 0 with skip set
	unit           string  // what perSec counts, e.g. "timeouts/s"
	nsPer          bool    // also show the time per unit (the bus)
	passage, floor *row    // the references of the ratio columns; nil for none
	heap           uint64  // peak heap in use above the baseline; 0: not measured
	note           string
	skip           string // why the row was not measured
}

type table struct {
	rows  []*row
	notes []string
}

func (t *table) add(r *row) *row {
	t.rows = append(t.rows, r)
	return r
}

func (t *table) write(w io.Writer) {
	fmt.Fprintln(w, "| scenario | implementation | n | throughput | × passage | × floor | peak heap | notes |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, r := range t.rows {
		if r.skip != "" {
			fmt.Fprintf(w, "| %s | %s | %s | — | | | | skipped: %s |\n", r.scenario, r.impl, count(r.n), r.skip)
			continue
		}
		tp := fmt.Sprintf("%s %s", count(int(r.perSec+0.5)), r.unit)
		if r.nsPer {
			tp = fmt.Sprintf("%.1f ns/event (%s)", 1e9/r.perSec, tp)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.scenario, r.impl, count(r.n), tp, ratio(r, r.passage), ratio(r, r.floor), heap(r.heap), r.note)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "× passage and × floor: this row's throughput divided by the reference's, measured in the same run (above 1 is faster).",
		"The passage reference is passage on the same backend — PostgreSQL for River; SQLite, the embedded default, for gocron and go-workflows —",
		"and the passage row of the same kind on the bus. Peak heap: the most heap in use while the row ran, sampled every 5 ms, above what was in use before it.")
	for _, n := range t.notes {
		fmt.Fprintln(w, "\n"+n)
	}
}

func ratio(r, ref *row) string {
	switch {
	case ref == nil || ref.skip != "" || ref.perSec == 0:
		return ""
	case r == ref:
		return "1"
	}
	x := r.perSec / ref.perSec
	if x < 0.1 {
		return fmt.Sprintf("%.3f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

func heap(b uint64) string {
	switch {
	case b == 0:
		return ""
	case b < 1<<20:
		return fmt.Sprintf("%d KiB", (b+1023)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// count formats n with thousands separators.
func count(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// heapPeak samples the heap in use every few milliseconds until stopped and
// returns its peak above what was in use, after a collection, when it began.
type heapPeak struct {
	base atomic.Uint64
	peak atomic.Uint64
	stop chan struct{}
	done sync.WaitGroup
}

func startHeapPeak() *heapPeak {
	h := heapBaseline()
	h.start()
	return h
}

// heapBaseline records the heap in use after a collection; start begins the
// sampling, after another collection, so that the garbage made in between
// (adding the orders) is not counted while what stays live (timers or jobs
// held in memory) is.
func heapBaseline() *heapPeak {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	h := &heapPeak{stop: make(chan struct{})}
	h.base.Store(m.HeapInuse)
	h.peak.Store(m.HeapInuse)
	return h
}

func (h *heapPeak) start() {
	runtime.GC()
	h.sample()
	h.done.Add(1)
	go func() {
		defer h.done.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-tick.C:
				h.sample()
			}
		}
	}()
}

func (h *heapPeak) sample() {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if m.HeapInuse > h.peak.Load() {
		h.peak.Store(m.HeapInuse)
	}
}

// Stop ends the sampling and returns the peak above the baseline (at least 1
// byte, so that a measured row never reads as unmeasured).
func (h *heapPeak) Stop() uint64 {
	close(h.stop)
	h.done.Wait()
	h.sample()
	return max(h.peak.Load()-h.base.Load(), 1)
}
