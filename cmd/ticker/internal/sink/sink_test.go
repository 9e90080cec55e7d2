package sink_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
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

// send marshals each event and sends it to s as the relay would: its
// stored body under its key and type.
func send(t *testing.T, s interface {
	Send(ctx context.Context, key, typ string, body []byte) error
}, events ...any) error {
	t.Helper()
	for _, e := range events {
		body, env, err := sink.Marshal(e)
		require.NoError(t, err)
		if err := s.Send(context.Background(), env.ID, env.Type, body); err != nil {
			return err
		}
	}
	return nil
}

func TestJSONLinesWritesOneObjectPerEvent(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	skipped := tick.TicksSkipped{Unit: tick.Hour, From: minute(0).At, To: minute(0).At.Add(2 * time.Hour), Count: 3, Policy: "skip"}
	require.NoError(t, send(t, sink.NewJSONLines(&out), minute(0), minute(1), skipped))

	lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
	require.Len(t, lines, 3)
	var first, second, third map[string]any
	require.NoError(t, json.Unmarshal(lines[0], &first))
	require.NoError(t, json.Unmarshal(lines[1], &second))
	require.NoError(t, json.Unmarshal(lines[2], &third))
	require.Equal(t, map[string]any{
		"specversion": "1.0", "id": "minute/2026-11-21T12:00:00Z", "source": "/passage/tick",
		"type": "MinuteHasPassed", "subject": "minute", "time": "2026-11-21T12:00:00Z", "datacontenttype": "application/json",
		"data": map[string]any{
			"unit": "minute", "boundary": "2026-11-21T12:00:00Z", "previous": nil,
			"emitted_at": "2026-11-21T12:00:00.001Z", "catch_up": false,
		},
	}, first)
	require.Equal(t, "2026-11-21T12:00:00Z", second["data"].(map[string]any)["previous"])
	require.Equal(t, map[string]any{
		"specversion": "1.0", "id": "skipped/hour/2026-11-21T12:00:00Z..2026-11-21T14:00:00Z", "source": "/passage/tick",
		"type": "TicksSkipped", "subject": "hour", "time": "2026-11-21T14:00:00Z", "datacontenttype": "application/json",
		"data": map[string]any{
			"unit": "hour", "from": "2026-11-21T12:00:00Z", "to": "2026-11-21T14:00:00Z", "count": 3.0,
			"policy": "skip", "emitted_at": "0001-01-01T00:00:00Z",
		},
	}, third)
}

// A record an older ticker stored in the outbox before the envelope (a
// flat object) leaves every sink as its envelope, the same bytes a
// record stored now has, and the same at every delivery.
func TestARecordStoredBeforeTheEnvelopeLeavesAsItsEnvelope(t *testing.T) {
	t.Parallel()
	slot := time.Date(2026, 11, 21, 12, 5, 0, 0, time.UTC)
	for _, c := range []struct {
		event any
		flat  string
	}{
		{minute(1), `{"type":"MinuteHasPassed","id":"minute/2026-11-21T12:01:00Z","unit":"minute","boundary":"2026-11-21T12:01:00Z","previous":"2026-11-21T12:00:00Z","emitted_at":"2026-11-21T12:01:00.001Z","catch_up":false}`},
		{tick.TicksSkipped{Unit: tick.Hour, From: slot.Truncate(time.Hour), To: slot.Truncate(time.Hour).Add(time.Hour), Count: 2, Policy: "skip", EmittedAt: slot.Add(2 * time.Hour)},
			`{"type":"TicksSkipped","id":"skipped/hour/2026-11-21T12:00:00Z..2026-11-21T13:00:00Z","unit":"hour","previous":null,"emitted_at":"2026-11-21T14:05:00Z","catch_up":false,"from":"2026-11-21T12:00:00Z","to":"2026-11-21T13:00:00Z","count":2,"policy":"skip"}`},
		{schedule.Run{RunID: "r-1", SlotID: "poll@2026-11-21T12:05:00Z", Schedule: "poll", Slot: slot, FiredAt: slot.Add(time.Second), Attempt: 1, Command: "poll", Payload: []byte(`{"a":1}`)},
			`{"type":"ScheduleRun","id":"poll@2026-11-21T12:05:00Z","run_id":"r-1","slot_id":"poll@2026-11-21T12:05:00Z","schedule":"poll","slot":"2026-11-21T12:05:00Z","fired_at":"2026-11-21T12:05:01Z","attempt":1,"manual":false,"command":"poll","payload":{"a":1}}`},
		{schedule.SlotsSkipped{Schedule: "poll", From: slot, To: slot.Add(4 * time.Minute), Count: 3, Policy: "latest-only"},
			`{"type":"SlotsSkipped","id":"slots-skipped/poll/2026-11-21T12:05:00Z..2026-11-21T12:09:00Z","schedule":"poll","from":"2026-11-21T12:05:00Z","to":"2026-11-21T12:09:00Z","count":3,"policy":"latest-only"}`},
	} {
		body, env, err := sink.Marshal(c.event)
		require.NoError(t, err)
		var now, before bytes.Buffer
		lines := sink.NewJSONLines(&now)
		require.NoError(t, lines.Send(context.Background(), env.ID, env.Type, body))
		old := sink.NewJSONLines(&before)
		require.NoError(t, old.Send(context.Background(), env.ID, env.Type, []byte(c.flat)))
		require.NoError(t, old.Send(context.Background(), env.ID, env.Type, []byte(c.flat)))
		require.Equal(t, string(body)+"\n", now.String(), "a record stored now leaves as it is")
		require.Equal(t, now.String()+now.String(), before.String(), "%T: one stored before leaves as its envelope, each time the same", c.event)
	}
}

func TestMarshalRejectsForeignValues(t *testing.T) {
	t.Parallel()
	_, _, err := sink.Marshal("not an event")
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

// A webhook sends one signed request per record, with the record's key
// as its Idempotency-Key, and does not retry a refusal itself: the relay
// that calls it does, with backoff.
func TestWebhookSendsOneSignedRequestPerRecord(t *testing.T) {
	t.Parallel()
	recv := &receiver{failures: 1, secret: []byte("s3cret")}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	hook, err := sink.NewWebhook(sink.WebhookConfig{URL: srv.URL + "/hook?token=abc", Secret: recv.secret})
	require.NoError(t, err)
	require.NotContains(t, hook.URL(), "abc", "a token in the query is not shown")

	err = send(t, hook, minute(0))
	require.ErrorContains(t, err, "503")
	require.ErrorContains(t, err, minute(0).ID(), "the refusal names the record")
	require.Empty(t, recv.accepted(), "one request, refused, not retried here")
	require.NoError(t, send(t, hook, minute(0), minute(1)))
	require.Equal(t, []string{"minute/2026-11-21T12:00:00Z", "minute/2026-11-21T12:01:00Z"}, recv.accepted())
	require.Zero(t, recv.badSigs)
}

func TestWebhookGivesUpWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	hook, err := sink.NewWebhook(sink.WebhookConfig{URL: srv.URL})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	body, env, err := sink.Marshal(minute(0))
	require.NoError(t, err)
	require.ErrorIs(t, hook.Send(ctx, env.ID, env.Type, body), context.Canceled)
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
	require.NoError(t, send(t, sink.NewJSONLines(&out), run))
	var got map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	require.Equal(t, map[string]any{
		"specversion": "1.0", "id": "report@1960-01-04T09:44:30Z", "source": "/passage/schedule",
		"type": "ScheduleRun", "subject": "report", "time": "1960-01-04T09:44:30Z", "datacontenttype": "application/json",
		"data": map[string]any{
			"run_id": "r-1", "slot_id": "report@1960-01-04T09:44:30Z", "schedule": "report",
			"slot": "1960-01-04T09:00:00-00:44:30", "fired_at": "1960-01-04T09:00:01.5-00:44:30",
			"attempt": 2.0, "manual": false, "command": "send-report",
			"payload": map[string]any{"to": []any{"ops"}},
		},
	}, got)
	require.Contains(t, out.String(), `"payload":{"to":["ops"]}`, "the payload inline, compacted onto the line")

	var rec sink.RunRecord
	require.NoError(t, json.Unmarshal(out.Bytes(), &rec))
	require.True(t, rec.Slot.Equal(slot))
	_, off := rec.Slot.Zone()
	require.Equal(t, -(44*60 + 30), off)
	want := sink.NewRunRecord(run)
	require.Equal(t, []string{want.Type, want.ID, want.RunID, want.SlotID, want.Schedule, want.Command}, []string{rec.Type, rec.ID, rec.RunID, rec.SlotID, rec.Schedule, rec.Command}, "read back as it was")
	require.True(t, rec.FiredAt.Equal(run.FiredAt))
	require.Equal(t, 2, rec.Attempt)
	require.JSONEq(t, string(run.Payload), string(rec.Payload))

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
	require.JSONEq(t, `{"specversion":"1.0","id":"slots-skipped/poll/2026-11-21T12:00:00Z..2026-11-21T12:04:00Z",
		"source":"/passage/schedule","type":"SlotsSkipped","subject":"poll","time":"2026-11-21T12:04:00Z","datacontenttype":"application/json",
		"data":{"schedule":"poll","from":"2026-11-21T12:00:00Z","to":"2026-11-21T12:04:00Z","count":3,"policy":"latest-only"}}`, string(body))
	var back sink.SlotsSkippedRecord
	require.NoError(t, json.Unmarshal(body, &back))
	require.Equal(t, "slots-skipped/poll/2026-11-21T12:00:00Z..2026-11-21T12:04:00Z", back.ID)
	require.EqualValues(t, 3, back.Count)
}
