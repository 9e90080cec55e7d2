package sink_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

func minute(i int) tick.MinuteHasPassed {
	at := time.Date(2026, 11, 21, 12, i, 0, 0, time.UTC)
	p := tick.Passage{At: at, EmittedAt: at.Add(time.Millisecond)}
	if i > 0 {
		p.Since = at.Add(-time.Minute)
	}
	return tick.MinuteHasPassed{Passage: p}
}

func TestJSONLinesWritesOneObjectPerEvent(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	skipped := tick.TicksSkipped{Unit: tick.Hour, From: minute(0).At, To: minute(0).At.Add(2 * time.Hour), Count: 3, Policy: "skip"}
	require.NoError(t, sink.NewJSONLines(&out).Publish(context.Background(), minute(0), minute(1), skipped))

	lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
	require.Len(t, lines, 3)
	var first, second, third map[string]any
	require.NoError(t, json.Unmarshal(lines[0], &first))
	require.NoError(t, json.Unmarshal(lines[1], &second))
	require.NoError(t, json.Unmarshal(lines[2], &third))
	require.Equal(t, map[string]any{
		"type": "MinuteHasPassed", "id": "minute/2026-11-21T12:00:00Z", "unit": "minute",
		"boundary": "2026-11-21T12:00:00Z", "previous": nil,
		"emitted_at": "2026-11-21T12:00:00.001Z", "catch_up": false,
	}, first)
	require.Equal(t, "2026-11-21T12:00:00Z", second["previous"])
	require.Equal(t, "TicksSkipped", third["type"])
	require.EqualValues(t, 3, third["count"])
}

func TestJSONLinesRejectsForeignValues(t *testing.T) {
	t.Parallel()
	err := sink.NewJSONLines(io.Discard).Publish(context.Background(), "not an event")
	require.ErrorIs(t, err, sink.ErrNotATickEvent)
	require.ErrorContains(t, err, "string")
}

func TestNewWebhookRejectsURLsThatAreNotHTTP(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "ftp://example.com/x", "example.com/hook", "http://", "::"} {
		_, err := sink.NewWebhook(sink.WebhookConfig{URL: u})
		require.ErrorIs(t, err, sink.ErrBadWebhookURL, "url %q", u)
	}
}

// receiver is a webhook endpoint that fails its first failures requests.
type receiver struct {
	mu       sync.Mutex
	failures int
	secret   []byte
	got      []string // idempotency keys of accepted requests, in order
	badSigs  int
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failures > 0 {
		r.failures--
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	if !sink.Verify(r.secret, body, req.Header.Get(sink.HeaderSignature)) {
		r.badSigs++
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var rec sink.Record
	if err := json.Unmarshal(body, &rec); err != nil || rec.ID != req.Header.Get(sink.HeaderIdempotency) {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	r.got = append(r.got, rec.ID)
}

func (r *receiver) accepted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

func TestWebhookDeliversEveryEventOnceInOrderAfterTheReceiverRecovers(t *testing.T) {
	t.Parallel()
	recv := &receiver{failures: 7, secret: []byte("s3cret")}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)

	hook, err := sink.NewWebhook(sink.WebhookConfig{
		URL: srv.URL, Secret: recv.secret, Attempts: 3,
		InitialBackoff: time.Microsecond, MaxBackoff: time.Microsecond,
	})
	require.NoError(t, err)

	events := []any{minute(0), minute(1), minute(2)}
	ctx := context.Background()
	// Like the ticker, offer the same batch again after every failure.
	var failures int
	for hook.Publish(ctx, events...) != nil {
		failures++
		require.Less(t, failures, 10, "the receiver recovered; delivery must succeed")
	}
	require.Equal(t, 2, failures, "7 refusals at 3 attempts per Publish")
	require.Equal(t, []string{
		"minute/2026-11-21T12:00:00Z", "minute/2026-11-21T12:01:00Z", "minute/2026-11-21T12:02:00Z",
	}, recv.accepted())
	require.Zero(t, recv.badSigs)
}

func TestFanoutNeverResendsWhatASinkAlreadyTook(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var keys []string
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 2 { // the second event fails once
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		keys = append(keys, req.Header.Get(sink.HeaderIdempotency))
	}))
	t.Cleanup(srv.Close)
	hook, err := sink.NewWebhook(sink.WebhookConfig{URL: srv.URL, Attempts: 1})
	require.NoError(t, err)
	var stdout bytes.Buffer
	fan := sink.NewFanout(sink.NewJSONLines(&stdout), hook)

	ctx := context.Background()
	// The ticker publishes one event per call and offers the failed one
	// again; the healthy sink must not see it twice.
	require.NoError(t, fan.Publish(ctx, minute(0)))
	require.ErrorContains(t, fan.Publish(ctx, minute(1)), "502")
	require.NoError(t, fan.Publish(ctx, minute(1)))
	require.NoError(t, fan.Publish(ctx, minute(2)))

	require.Equal(t, []string{minute(0).ID(), minute(1).ID(), minute(2).ID()}, keys)
	require.Len(t, records(t, stdout.String()), 3, "stdout got each event once")
}

func records(t *testing.T, out string) []sink.Record {
	t.Helper()
	var recs []sink.Record
	for line := range strings.Lines(out) {
		var r sink.Record
		require.NoError(t, json.Unmarshal([]byte(line), &r))
		recs = append(recs, r)
	}
	return recs
}

func TestWebhookGivesUpWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	hook, err := sink.NewWebhook(sink.WebhookConfig{URL: srv.URL, Attempts: 100, InitialBackoff: time.Hour})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, hook.Publish(ctx, minute(0)), context.Canceled)
}

func TestVerify(t *testing.T) {
	t.Parallel()
	body := []byte(`{"type":"DayHasPassed"}`)
	sig := sink.Sign([]byte("k"), body)
	require.True(t, sink.Verify([]byte("k"), body, sig))
	require.False(t, sink.Verify([]byte("other"), body, sig))
	require.False(t, sink.Verify([]byte("k"), append(body, ' '), sig))
	require.False(t, sink.Verify([]byte("k"), body, ""))
}

func TestFanoutTriesEverySinkAndJoinsFailures(t *testing.T) {
	t.Parallel()
	var a, b bytes.Buffer
	failing := sink.NewJSONLines(failingWriter{})
	err := sink.NewFanout(sink.NewJSONLines(&a), failing, sink.NewJSONLines(&b)).Publish(context.Background(), minute(0))
	require.ErrorIs(t, err, io.ErrShortWrite)
	require.NotEmpty(t, a.String())
	require.Equal(t, a.String(), b.String())
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrShortWrite }

// Africa/Monrovia's local mean time, -00:44:30, survives the JSON body:
// encoding/json's time.Time would print -00:44 and name another instant.
func TestRecordsCarrySecondsOffsetsLosslessly(t *testing.T) {
	t.Parallel()
	loc, err := time.LoadLocation("Africa/Monrovia")
	require.NoError(t, err)
	at := time.Date(1960, 1, 2, 0, 0, 0, 0, loc)
	event := tick.DayHasPassed{Passage: tick.Passage{At: at, Since: at.AddDate(0, 0, -1), EmittedAt: at.Add(time.Second)}}
	body, _, err := sink.Marshal(event)
	require.NoError(t, err)
	require.Contains(t, string(body), `"boundary":"1960-01-02T00:00:00-00:44:30"`)
	var rec sink.Record
	require.NoError(t, json.Unmarshal(body, &rec))
	for _, got := range []time.Time{rec.Boundary.Time, rec.Previous.AddDate(0, 0, 1), rec.EmittedAt.Add(-time.Second)} {
		require.True(t, got.Equal(at), "%s, want %s", got, at)
		_, off := got.Zone()
		require.Equal(t, -(44*60 + 30), off)
	}
}

func TestScheduleRunRecordCarriesTheRunLosslessly(t *testing.T) {
	t.Parallel()
	loc, err := time.LoadLocation("Africa/Monrovia")
	require.NoError(t, err)
	slot := time.Date(1960, 1, 4, 9, 0, 0, 0, loc)
	run := schedule.Run{
		RunID: "r-1", SlotID: schedule.SlotID("report", slot), Schedule: "report",
		Slot: slot, FiredAt: slot.Add(1500 * time.Millisecond), Attempt: 2,
		Command: "send-report", Payload: []byte(`{"to": ["ops"]}`),
	}
	var out bytes.Buffer
	require.NoError(t, sink.NewJSONLines(&out).Publish(context.Background(), run))
	var got map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	require.Equal(t, map[string]any{
		"type": "ScheduleRun", "id": "report@1960-01-04T09:44:30Z", "run_id": "r-1",
		"slot_id": "report@1960-01-04T09:44:30Z", "schedule": "report",
		"slot": "1960-01-04T09:00:00-00:44:30", "fired_at": "1960-01-04T09:00:01.5-00:44:30",
		"attempt": 2.0, "manual": false, "command": "send-report",
		"payload": map[string]any{"to": []any{"ops"}},
	}, got)
	require.Contains(t, out.String(), `"payload":{"to":["ops"]}`, "the payload inline, compacted onto the line")

	var rec sink.RunRecord
	require.NoError(t, json.Unmarshal(out.Bytes(), &rec))
	require.True(t, rec.Slot.Equal(slot))
	_, off := rec.Slot.Zone()
	require.Equal(t, -(44*60 + 30), off)

	// No payload is null; bytes that are not JSON travel as a string
	// rather than breaking the line.
	for payload, want := range map[string]string{"": `"payload":null`, "not json": `"payload":"not json"`} {
		run.Payload = []byte(payload)
		body, env, err := sink.Marshal(run)
		require.NoError(t, err)
		require.True(t, json.Valid(body), "%s", body)
		require.Contains(t, string(body), want)
		require.Equal(t, sink.Envelope{Type: "ScheduleRun", ID: run.SlotID}, env)
	}
}

func TestSlotsSkippedRecord(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	body, env, err := sink.Marshal(schedule.SlotsSkipped{Schedule: "poll", From: from, To: from.Add(4 * time.Minute), Count: 3, Policy: "latest-only"})
	require.NoError(t, err)
	require.Equal(t, "SlotsSkipped", env.Type)
	require.JSONEq(t, `{"type":"SlotsSkipped","id":"slots-skipped/poll/2026-11-21T12:00:00Z..2026-11-21T12:04:00Z",
		"schedule":"poll","from":"2026-11-21T12:00:00Z","to":"2026-11-21T12:04:00Z","count":3,"policy":"latest-only"}`, string(body))
}

// A run that failed on one sink is retried under the same slot id (a new
// run id, the next attempt): the sink that already took it does not get
// it again, the one that failed does.
func TestFanoutDeliversARetriedSlotOnlyWhereItFailed(t *testing.T) {
	t.Parallel()
	var ok, flaky bytes.Buffer
	failing := &failOnce{w: &flaky}
	fan := sink.NewFanout(sink.NewJSONLines(&ok), sink.NewJSONLines(failing))
	ctx := context.Background()
	slot := time.Date(2026, 11, 21, 12, 2, 0, 0, time.UTC)
	first := schedule.Run{RunID: "a", SlotID: schedule.SlotID("poll", slot), Schedule: "poll", Slot: slot, Attempt: 1}
	retry := first
	retry.RunID, retry.Attempt = "b", 2
	next := schedule.Run{RunID: "c", SlotID: schedule.SlotID("poll", slot.Add(2*time.Minute)), Schedule: "poll", Slot: slot.Add(2 * time.Minute), Attempt: 1}
	manual := schedule.Run{RunID: "d", SlotID: "poll@manual/d", Schedule: "poll", Slot: slot, Manual: true, Attempt: 1}

	require.ErrorIs(t, fan.Publish(ctx, first), io.ErrShortWrite)
	require.NoError(t, fan.Publish(ctx, retry))
	require.NoError(t, fan.Publish(ctx, next))
	require.NoError(t, fan.Publish(ctx, manual), "a manual run at an acknowledged slot is still new")

	runIDs := func(out string) []string {
		var ids []string
		for line := range strings.Lines(out) {
			var r sink.RunRecord
			require.NoError(t, json.Unmarshal([]byte(line), &r))
			ids = append(ids, r.RunID)
		}
		return ids
	}
	require.Equal(t, []string{"a", "c", "d"}, runIDs(ok.String()))
	require.Equal(t, []string{"b", "c", "d"}, runIDs(flaky.String()))
}

// failOnce fails its first write.
type failOnce struct {
	w      io.Writer
	failed bool
}

func (f *failOnce) Write(p []byte) (int, error) {
	if !f.failed {
		f.failed = true
		return 0, io.ErrShortWrite
	}
	return f.w.Write(p)
}
