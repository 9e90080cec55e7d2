package main_test

import (
	"crypto/sha256"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
)

// soakReceiver is the webhook receiver: about 44 ms an answer, 500 or
// 503 for a share of the requests in a window, a few requests stalled; every
// request's signature verified, every accepted request logged.
type soakReceiver struct {
	t    *testing.T
	plan soakPlan
	srv  *httptest.Server

	mu                       sync.Mutex
	failFrom, failTo         time.Time
	stallFrom, stallTo       time.Time
	stalled, refused, stalls int
	inFailWindow             int            // requests in [failFrom, failTo)
	refusedKey               map[string]int // refusals by key
	requests, bad            int
	accepted                 []soakAcceptance
}

type soakAcceptance struct {
	Key, Type, RunID, SlotID, Schedule string
	Slot, FiredAt, From, To            time.Time
	At                                 time.Time
	Body                               [32]byte
}

func newSoakReceiver(t *testing.T, plan soakPlan) *soakReceiver {
	r := &soakReceiver{t: t, plan: plan, refusedKey: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	return r
}

func (r *soakReceiver) setWindows(b1 time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failFrom, r.failTo = b1.Add(r.plan.failFrom), b1.Add(r.plan.failTo)
	r.stallFrom, r.stallTo = b1.Add(r.plan.stallFrom), b1.Add(r.plan.stallTo)
}

func (r *soakReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var rec struct {
		Type     string     `json:"type"`
		ID       string     `json:"id"`
		RunID    string     `json:"run_id"`
		SlotID   string     `json:"slot_id"`
		Schedule string     `json:"schedule"`
		Slot     *sink.Time `json:"slot"`
		FiredAt  *sink.Time `json:"fired_at"`
		From     *sink.Time `json:"from"`
		To       *sink.Time `json:"to"`
	}
	// A CloudEvent (docs/events.md): type and id in the envelope, the
	// record's fields in its data.
	var ev struct {
		Type string          `json:"type"`
		ID   string          `json:"id"`
		Data json.RawMessage `json:"data"`
	}
	jsonErr := json.Unmarshal(body, &ev)
	if jsonErr == nil {
		jsonErr = json.Unmarshal(ev.Data, &rec)
		rec.Type, rec.ID = ev.Type, ev.ID
	}
	now := time.Now()
	r.mu.Lock()
	r.requests++
	if !sink.Verify([]byte(soakSecret), body, req.Header.Get(sink.HeaderSignature)) || jsonErr != nil ||
		req.Header.Get(sink.HeaderIdempotency) != rec.ID || req.Header.Get(sink.HeaderEvent) != rec.Type {
		r.bad++
		r.mu.Unlock()
		http.Error(w, "bad signature or headers", http.StatusUnauthorized)
		return
	}
	fail, stall := r.decide(now, rec.ID)
	r.mu.Unlock()

	time.Sleep(44 * time.Millisecond)
	if fail != 0 {
		http.Error(w, "failing for a while", fail)
		return
	}
	if stall {
		select {
		case <-time.After(r.plan.stallFor):
		case <-req.Context().Done():
			// The sender gave up (its 10 s timeout): not accepted.
			return
		}
	}
	a := soakAcceptance{Key: rec.ID, Type: rec.Type, RunID: rec.RunID, SlotID: rec.SlotID, Schedule: rec.Schedule,
		At: time.Now(), Body: sha256.Sum256(body)}
	for _, p := range []struct {
		dst *time.Time
		src *sink.Time
	}{{&a.Slot, rec.Slot}, {&a.FiredAt, rec.FiredAt}, {&a.From, rec.From}, {&a.To, rec.To}} {
		if p.src != nil {
			*p.dst = p.src.Time
		}
	}
	r.mu.Lock()
	r.accepted = append(r.accepted, a)
	if stall {
		r.stalled++
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// decide tells whether a request at now for key fails (with that status)
// or stalls, and counts it. r.mu is held.
func (r *soakReceiver) decide(now time.Time, key string) (fail int, stall bool) {
	if !now.Before(r.failFrom) && now.Before(r.failTo) {
		r.inFailWindow++
		switch {
		case r.plan.failEvery > 0 && r.inFailWindow%r.plan.failEvery == 0:
			fail = []int{http.StatusInternalServerError, http.StatusServiceUnavailable}[r.refused%2]
		case r.plan.failEvery == 0 && rand.Float64() < r.plan.failRate:
			fail = http.StatusServiceUnavailable
		}
	}
	stall = fail == 0 && !now.Before(r.stallFrom) && now.Before(r.stallTo) && r.stalls < r.plan.stalls
	if fail != 0 {
		r.refused++
		r.refusedKey[key]++
	}
	if stall {
		r.stalls++
	}
	return fail, stall
}

func (r *soakReceiver) log() []soakAcceptance {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.accepted)
}

func (r *soakReceiver) badSignatures() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bad
}
