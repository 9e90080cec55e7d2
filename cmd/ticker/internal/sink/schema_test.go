package sink_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// schemaDir holds the JSON Schemas docs/events.md documents.
var schemaDir = filepath.Join("..", "..", "..", "..", "docs", "schemas")

// schemas compiles the schema of every record type, with format
// assertions on (the envelope's time must be a date-time).
func schemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	out := map[string]*jsonschema.Schema{}
	types := []string{"TicksSkipped", "ScheduleRun", "SlotsSkipped", "cloudevent"}
	for _, u := range tick.Units() {
		types = append(types, strings.ToUpper(string(u[:1]))+string(u[1:])+"HasPassed")
	}
	for _, typ := range types {
		s, err := c.Compile(filepath.Join(schemaDir, typ+".json"))
		require.NoError(t, err, typ)
		out[typ] = s
	}
	return out
}

// validate checks body against its type's schema and the envelope's.
func validate(t *testing.T, schemas map[string]*jsonschema.Schema, where string, body []byte) map[string]any {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	require.NoError(t, err, "%s: %s", where, body)
	var ev map[string]any
	require.NoError(t, json.Unmarshal(body, &ev))
	typ, _ := ev["type"].(string)
	s, ok := schemas[typ]
	require.True(t, ok, "%s: no schema for type %q", where, typ)
	require.NoError(t, s.Validate(inst), "%s: %s", where, body)
	require.NoError(t, schemas["cloudevent"].Validate(inst), "%s: %s", where, body)
	return ev
}

// records are one of each: a boundary of every unit (in a zone whose
// offset has seconds, a catch-up), a skip report, a schedule's run and
// its skipped slots.
func records(t *testing.T) []any {
	t.Helper()
	monrovia, err := time.LoadLocation("Africa/Monrovia")
	require.NoError(t, err)
	at := time.Date(1970, 1, 1, 0, 0, 0, 0, monrovia)
	var out []any
	for _, u := range tick.Units() {
		ev, err := tick.NewEvent(u, tick.Passage{At: at, Since: tick.Previous(u, at.Add(-time.Nanosecond), monrovia), EmittedAt: at.Add(3 * time.Second), CatchUp: u == tick.Day})
		require.NoError(t, err)
		out = append(out, ev)
	}
	slot := time.Date(2026, 11, 21, 12, 5, 0, 0, time.UTC)
	return append(out, minute(1),
		tick.TicksSkipped{Unit: tick.Minute, From: minute(3).At, To: minute(5).At, Count: 3, Policy: "latest-only", EmittedAt: minute(6).At},
		schedule.Run{RunID: "r-1", SlotID: schedule.SlotID("billing.eu", slot), Schedule: "billing.eu", Slot: slot, FiredAt: slot.Add(time.Second), Attempt: 1, Command: "bill", Payload: []byte(`{"to":["ops"]}`)},
		schedule.Run{RunID: "r-2", SlotID: "report@manual/r-2", Schedule: "report", Slot: slot, FiredAt: slot, Attempt: 1, Manual: true, Command: "report"},
		schedule.SlotsSkipped{Schedule: "poll", From: slot, To: slot.Add(4 * time.Minute), Count: 3, Policy: "latest-only"},
	)
}

// What stdout, a webhook and NATS emit for the same records validates
// against the schemas of docs/schemas, and is one event: the same id
// (which webhook-id and Nats-Msg-Id carry too), the same attributes, the
// same data. NATS carries the CloudEvent in the binding's binary mode;
// the envelope is rebuilt from its ce- headers (percent-decoded) and its
// body, as a CloudEvents SDK does.
func TestEverySinkEmitsOneEventThatTheSchemasTake(t *testing.T) {
	t.Parallel()
	sc := schemas(t)
	recs := records(t)

	var lines bytes.Buffer
	require.NoError(t, send(t, sink.NewJSONLines(&lines), recs...))
	stdout := strings.Split(strings.TrimSpace(lines.String()), "\n")
	require.Len(t, stdout, len(recs))

	srv, got := capture(t)
	hook, err := sink.NewWebhook(sink.WebhookConfig{URL: srv.URL, Secret: []byte("s3cret")})
	require.NoError(t, err)
	require.NoError(t, send(t, hook, recs...))
	posted := got()
	require.Len(t, posted, len(recs))

	var onNATS []map[string]any
	if u := natsURLOrEmpty(); u != "" {
		js := jsOf(t, u)
		prefix := natsPrefix(t, js)
		n, err := sink.NewNATS(context.Background(), sink.NATSConfig{URL: u, Prefix: prefix, Window: time.Hour})
		require.NoError(t, err)
		defer n.Close()
		require.NoError(t, send(t, n, recs...))
		for _, m := range stored(t, js, n.Stream()) {
			onNATS = append(onNATS, envelopeOfMsg(t, m))
		}
		require.Len(t, onNATS, len(recs))
	} else {
		t.Log("PASSAGE_TEST_NATS is not set: stdout and webhooks only")
	}

	for i, r := range recs {
		_, env, err := sink.Marshal(r)
		require.NoError(t, err)
		fromStdout := validate(t, sc, "stdout", []byte(stdout[i]))
		fromWebhook := validate(t, sc, "webhook", posted[i].body)
		require.Equal(t, env.ID, fromStdout["id"])
		require.Equal(t, fromStdout, fromWebhook, "%T: the same event on stdout and a webhook", r)
		require.Equal(t, env.ID, posted[i].header.Get("webhook-id"))
		if onNATS != nil {
			body, err := json.Marshal(onNATS[i])
			require.NoError(t, err)
			fromNATS := validate(t, sc, "nats", body)
			require.Equal(t, fromStdout, fromNATS, "%T: the same event on stdout and NATS", r)
		}
		// What JSON Schema cannot say: a run's subject is its
		// schedule, its id its slot id.
		if data, ok := fromStdout["data"].(map[string]any); ok && fromStdout["type"] == "ScheduleRun" {
			require.Equal(t, data["slot_id"], fromStdout["id"])
			require.Equal(t, data["schedule"], fromStdout["subject"])
		}
	}
}

// envelopeOfMsg rebuilds the structured CloudEvent of a message in the
// binary content mode: each ce-<name> header an attribute (its value
// percent-decoded), the body the data.
func envelopeOfMsg(t *testing.T, m *jetstream.RawStreamMsg) map[string]any {
	t.Helper()
	ev := map[string]any{}
	for k, v := range m.Header {
		name, ok := strings.CutPrefix(strings.ToLower(k), "ce-")
		if !ok {
			continue
		}
		val, err := url.PathUnescape(v[0])
		require.NoError(t, err, k)
		ev[name] = val
	}
	var data any
	require.NoError(t, json.Unmarshal(m.Data, &data), "%s", m.Data)
	ev["data"] = data
	require.Equal(t, sink.NATSMsgID(ev["id"].(string)), m.Header.Get(jetstream.MsgIDHeader), "Nats-Msg-Id is the event's id")
	return ev
}

// The schemas are not vacuous: each refuses what a sink must not send.
func TestTheSchemasRefuseWhatIsNotTheEvent(t *testing.T) {
	t.Parallel()
	sc := schemas(t)
	body, _, err := sink.Marshal(minute(1))
	require.NoError(t, err)
	run, _, err := sink.Marshal(schedule.Run{RunID: "r", SlotID: "poll@2026-11-21T12:05:00Z", Schedule: "poll", Slot: minute(5).At, FiredAt: minute(5).At, Attempt: 1})
	require.NoError(t, err)
	// Unchanged, both pass: each case below breaks one thing.
	for schema, b := range map[string][]byte{"MinuteHasPassed": body, "ScheduleRun": run} {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		require.NoError(t, err)
		require.NoError(t, sc[schema].Validate(inst))
	}
	for _, c := range []struct {
		name, schema, body string
	}{
		{"a minute under the hour's schema", "HourHasPassed", string(body)},
		{"a minute under the skip report's schema", "TicksSkipped", string(body)},
		{"a minute of the hour's unit", "MinuteHasPassed", strings.Replace(string(body), `"unit":"minute"`, `"unit":"hour"`, 1)},
		{"no emitted_at", "MinuteHasPassed", strings.Replace(string(body), `"emitted_at":"2026-11-21T12:01:00.001Z",`, ``, 1)},
		{"a field of another casing", "MinuteHasPassed", strings.Replace(string(body), `"catch_up"`, `"catchUp"`, 1)},
		{"a time not in UTC", "MinuteHasPassed", strings.Replace(string(body), `"time":"2026-11-21T12:01:00Z"`, `"time":"2026-11-21T13:01:00+01:00"`, 1)},
		{"a time that is no date", "cloudevent", strings.Replace(string(body), `"time":"2026-11-21T12:01:00Z"`, `"time":"2026-13-41T12:01:00Z"`, 1)},
		{"an instant that is no instant", "MinuteHasPassed", strings.Replace(string(body), `"boundary":"2026-11-21T12:01:00Z"`, `"boundary":"noon"`, 1)},
		{"another specversion", "cloudevent", strings.Replace(string(body), `"specversion":"1.0"`, `"specversion":"0.3"`, 1)},
		{"no subject", "cloudevent", strings.Replace(string(body), `"subject":"minute",`, ``, 1)},
		{"a member CloudEvents does not have", "cloudevent", strings.Replace(string(body), `{`, `{"unit":"minute",`, 1)},
		{"a run without a run_id", "ScheduleRun", strings.Replace(string(run), `"run_id":"r",`, ``, 1)},
		{"a run of attempt 0", "ScheduleRun", strings.Replace(string(run), `"attempt":1`, `"attempt":0`, 1)},
		{"a run from the ticker", "ScheduleRun", strings.Replace(string(run), `"/passage/schedule"`, `"/passage/tick"`, 1)},
	} {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(c.body))
		require.NoError(t, err, c.name)
		require.Error(t, sc[c.schema].Validate(inst), c.name)
	}
}

// captured is a request a receiver got, to verify or replay.
type captured struct {
	body   []byte
	header http.Header
}

// capture is a receiver that keeps every request and answers 204.
func capture(t *testing.T) (*httptest.Server, func() []captured) {
	t.Helper()
	var mu sync.Mutex
	var got []captured
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, captured{body, r.Header.Clone()})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []captured {
		mu.Lock()
		defer mu.Unlock()
		return append([]captured(nil), got...)
	}
}
