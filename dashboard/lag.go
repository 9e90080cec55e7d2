package dashboard

import (
	"sync"
)

// LagSample is one reading of the lag chart.
type LagSample struct {
	At Time `json:"at"`
	// TickerSeconds is how long the ticker's earliest boundary not yet
	// emitted has been past (0 when every unit is current).
	TickerSeconds float64 `json:"ticker_seconds"`
	// ListSeconds is how long the oldest due item of any to-do list has
	// waited (0 when nothing is due).
	ListSeconds float64 `json:"todo_seconds"`
}

// lagOf reads the lags off a status.
func lagOf(st Status) LagSample {
	s := LagSample{At: st.Now}
	for _, u := range st.Units {
		if late := st.Now.Sub(u.Next.Time); late > 0 {
			s.TickerSeconds = max(s.TickerSeconds, late.Seconds())
		}
	}
	for _, l := range st.Lists {
		if l.OldestDue != nil {
			s.ListSeconds = max(s.ListSeconds, st.Now.Sub(l.OldestDue.Time).Seconds())
		}
	}
	return s
}

// lagHistory is a ring of the latest samples, in memory: a dashboard
// process keeps its own, from its start.
type lagHistory struct {
	mu      sync.Mutex
	samples []LagSample
	next    int
	full    bool
}

func newLagHistory(keep int) *lagHistory { return &lagHistory{samples: make([]LagSample, keep)} }

func (h *lagHistory) add(s LagSample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.samples[h.next] = s
	h.next = (h.next + 1) % len(h.samples)
	h.full = h.full || h.next == 0
}

// all returns the samples, oldest first.
func (h *lagHistory) all() []LagSample {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.full {
		return append([]LagSample{}, h.samples[:h.next]...)
	}
	return append(append([]LagSample{}, h.samples[h.next:]...), h.samples[:h.next]...)
}
