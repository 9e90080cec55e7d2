package orchestration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/timefmt"
)

// Inspection: read-only functions for status pages, dashboards and the
// command line. Unlike [New] they never migrate, so they take no write
// lock and create nothing; a database without the event store's table
// reads as holding no instances. They read through a *sqlx.DB, or a
// *sqlx.Tx for a consistent snapshot of several reads.

// eventsTable is the event store's table, read here directly so that
// reading creates nothing (eventstore.Open migrates).
const eventsTable = "eventstore_events"

// streamPrefix starts the name of every instance's stream.
const streamPrefix = "workflow/"

// HistoryEvent is one event of an instance's history as stored.
type HistoryEvent struct {
	// Version is the event's place in the history, from 1.
	Version int64
	// Type is the stored type name, e.g. "orchestration.StepCompleted".
	Type string
	// Data is the event as stored, JSON.
	Data json.RawMessage
	// RecordedAt is when the event was appended.
	RecordedAt time.Time
	// event is the decoded event (a workflowStarted, a stepCompleted…), or
	// nil for a type this package does not know (written by a newer one).
	event any
}

// Describe says in a line what the event means, its instants in loc: the
// line `ticker workflow show` prints and the dashboard's timeline shows,
// payloads as JSON on one line.
func (h HistoryEvent) Describe(loc *time.Location) string {
	at := func(t time.Time) string { return timefmt.Format(t.In(loc)) }
	switch e := h.event.(type) {
	case workflowStarted:
		if sc := e.traced(); sc.IsValid() {
			// The trace every wake-up of the instance is in.
			return fmt.Sprintf("started %s (input %s), trace %s", e.Workflow, compactJSON(e.Input), sc.TraceID())
		}
		return fmt.Sprintf("started %s (input %s)", e.Workflow, compactJSON(e.Input))
	case nowRecorded:
		return "read the clock: " + at(e.At)
	case idRecorded:
		return "new id " + e.ID
	case stepCompleted:
		return fmt.Sprintf("step %s completed (attempt %d): %s", e.Name, e.Attempts, compactJSON(e.Result))
	case stepAttemptFailed:
		return fmt.Sprintf("step %s attempt %d failed: %s; retry at %s", e.Name, e.Attempt, e.Error, at(e.RetryAt))
	case stepFailed:
		return fmt.Sprintf("step %s failed for good after %d attempts: %s", e.Name, e.Attempts, e.Error)
	case timerScheduled:
		return fmt.Sprintf("sleeping until %s (timer %d)", at(e.Until), e.Seq)
	case timerFired:
		return fmt.Sprintf("timer %d over", e.Seq)
	case awaitStarted:
		return fmt.Sprintf("awaiting signal %s until %s", e.Signal, at(e.Until))
	case signalReceived:
		return fmt.Sprintf("signal %s received: %s", e.Name, compactJSON(e.Payload))
	case signalConsumed:
		return fmt.Sprintf("took signal at version %d", e.Version)
	case awaitTimedOut:
		return "await timed out"
	case compensationCompleted:
		return fmt.Sprintf("compensation %s done", e.Name)
	case patchMarked:
		return fmt.Sprintf("took the new branch of patch %s", e.ID)
	case patchOldBranch:
		return fmt.Sprintf("takes the old branch of patch %s: it passed the point (decision %d) before the patch", e.ID, e.At+1)
	case workflowCompleted:
		return "completed: " + compactJSON(e.Output)
	case workflowFailed:
		return "failed: " + e.Error
	case cancelRequested:
		return "cancel requested"
	case workflowCancelled:
		return "cancelled"
	case workflowStuck:
		return "stuck: " + e.Error
	}
	return fmt.Sprintf("event %s: %s", h.Type, compactJSON(h.Data))
}

// compactJSON prints JSON on one line; "null" when there is none.
func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// decoder decodes stored events by their type names; built once, since
// the registry is fixed.
var decoder = func() *eventstore.Registry {
	r, err := registry()
	if err != nil {
		panic(err) // a programming error: the names are constants
	}
	return r
}()

func decodeHistoryEvent(typ string, data []byte, at, version int64) HistoryEvent {
	h := HistoryEvent{Version: version, Type: typ, Data: append(json.RawMessage(nil), data...), RecordedAt: sqldb.DecodeTime(at)}
	if e, err := decoder.Decode(typ, data); err == nil {
		h.event = e
	}
	return h
}

// hasEvents reports whether q sees the event store's table.
func hasEvents(ctx context.Context, q sqlx.ExtContext) (bool, error) {
	tables, err := sqldb.Tables(ctx, q)
	return tables[eventsTable], err
}

// ReadHistory returns an instance's history in order, without migrating;
// an instance never started has none.
func ReadHistory(ctx context.Context, q sqlx.ExtContext, instance string) ([]HistoryEvent, error) {
	if err := checkID(instance); err != nil {
		return nil, err
	}
	ok, err := hasEvents(ctx, q)
	if err != nil || !ok {
		return nil, wrapInspect("read the history of "+instance, err)
	}
	rows, err := q.QueryContext(ctx, q.Rebind(`SELECT version, type, data, recorded_at FROM `+eventsTable+` WHERE stream = ? ORDER BY version`), streamOf(instance))
	if err != nil {
		return nil, wrapInspect("read the history of "+instance, err)
	}
	defer rows.Close()
	var out []HistoryEvent
	for rows.Next() {
		var (
			version, at int64
			typ         string
			data        []byte
		)
		if err := rows.Scan(&version, &typ, &data, &at); err != nil {
			return nil, wrapInspect("read the history of "+instance, err)
		}
		out = append(out, decodeHistoryEvent(typ, data, at, version))
	}
	return out, wrapInspect("read the history of "+instance, rows.Err())
}

// StatusOf folds a history into its instance's status, as [Engine.Status]
// does.
func StatusOf(instance string, history []HistoryEvent) Status {
	recorded := make([]eventstore.Recorded, len(history))
	for i, h := range history {
		recorded[i] = eventstore.Recorded{Version: h.Version, Event: h.event}
	}
	return fold(instance, recorded)
}

// InstanceQuery selects the instances [ReadInstances] returns.
type InstanceQuery struct {
	// After is the instance ID the page starts after ("" from the first):
	// pages are by ID, keyset, never by offset.
	After string
	// State keeps only the instances in that state; "" keeps all.
	State State
	// Patch keeps only the instances that took the new branch of this
	// patch: their histories hold its marker (Status.HasPatch). "" keeps
	// all.
	Patch string
	// WithoutPatch keeps only the instances whose histories lack the
	// marker of this patch: those on its old branch — noted
	// (Status.OldBranches) once they woke past its point, or not yet
	// when they passed it before the patch and have slept since — and
	// those that have not reached its point, which will take the new
	// branch. With State Running, and started before the patch was
	// deployed (an instance started after it never takes the old
	// branch), these are the instances to wait for before
	// DeprecatePatch. "" keeps all.
	WithoutPatch string
	// Limit is the most instances returned, 1 to MaxInstancesRead.
	Limit int
}

// Matches reports whether an instance of status st passes q's filters:
// State, Patch and WithoutPatch (After and Limit page, they do not
// filter).
func (q InstanceQuery) Matches(st Status) bool {
	return (q.State == "" || st.State == q.State) &&
		(q.Patch == "" || st.HasPatch(q.Patch)) &&
		(q.WithoutPatch == "" || !st.HasPatch(q.WithoutPatch))
}

// MaxInstancesRead bounds the instances [ReadInstances] returns at once.
const MaxInstancesRead = 1000

// ReadInstances returns the status of the instances after q.After, by
// ID, at most q.Limit of them, keeping those q matches; more is true when
// instances remain after the last one returned. It reads the histories
// stream by stream, holding one at a time.
func ReadInstances(ctx context.Context, q sqlx.ExtContext, query InstanceQuery) (statuses []Status, more bool, err error) {
	if query.Limit <= 0 || query.Limit > MaxInstancesRead {
		return nil, false, fmt.Errorf("orchestration: read instances: limit %d must be 1 to %d", query.Limit, MaxInstancesRead)
	}
	ok, err := hasEvents(ctx, q)
	if err != nil || !ok {
		return nil, false, wrapInspect("read instances", err)
	}
	// Streams sort by name within the prefix, so "stream > after" is the
	// keyset; the prefix's upper bound ('/' + 1 is '0') keeps the walk on
	// workflow streams.
	rows, err := q.QueryContext(ctx, q.Rebind(`SELECT stream, version, type, data, recorded_at FROM `+eventsTable+`
WHERE stream > ? AND stream < ? ORDER BY stream, version`), streamOf(query.After), "workflow0")
	if err != nil {
		return nil, false, wrapInspect("read instances", err)
	}
	defer rows.Close()
	var (
		current string
		history []HistoryEvent
	)
	flush := func() {
		if current == "" {
			return
		}
		if st := StatusOf(current, history); query.Matches(st) {
			statuses = append(statuses, st)
		}
		history = history[:0]
	}
	for rows.Next() {
		var (
			stream, typ string
			version, at int64
			data        []byte
		)
		if err := rows.Scan(&stream, &version, &typ, &data, &at); err != nil {
			return nil, false, wrapInspect("read instances", err)
		}
		id := strings.TrimPrefix(stream, streamPrefix)
		if id != current {
			flush()
			if len(statuses) == query.Limit {
				return statuses, true, nil
			}
			current = id
		}
		history = append(history, decodeHistoryEvent(typ, data, at, version))
	}
	if err := rows.Err(); err != nil {
		return nil, false, wrapInspect("read instances", err)
	}
	flush()
	if len(statuses) > query.Limit {
		return statuses[:query.Limit], true, nil
	}
	return statuses, false, nil
}

// terminalTypes are the stored names of the events that set an
// instance's state (fold): an instance is in the state of the latest of
// them in its history, and running while it has none.
var terminalTypes = map[string]State{
	"orchestration.Completed": Completed,
	"orchestration.Failed":    Failed,
	"orchestration.Cancelled": Cancelled,
	"orchestration.Stuck":     Stuck,
}

// CountInstances counts the instances in each state, as [StatusOf] would
// fold their histories, without reading them: every stream is an
// instance (counted by its first event), and one that holds events of the
// terminal types is in the state of the latest of them (the last that
// fold applies); the others are running.
//
// The engine appends at most one terminal event per instance — it never
// runs an instance whose history already ends it — but a history may
// still hold several (written by another version of the package, or by
// hand), and the latest is its status; so the count is taken per stream,
// never per event.
func CountInstances(ctx context.Context, q sqlx.ExtContext) (map[State]int, error) {
	counts := map[State]int{Running: 0, Completed: 0, Failed: 0, Cancelled: 0, Stuck: 0}
	ok, err := hasEvents(ctx, q)
	if err != nil || !ok {
		return counts, wrapInspect("count instances", err)
	}
	var instances int
	err = sqlx.GetContext(ctx, q, &instances, q.Rebind(`SELECT COUNT(*) FROM `+eventsTable+`
WHERE stream > ? AND stream < ? AND version = 1`), streamPrefix, "workflow0")
	if err != nil {
		return counts, wrapInspect("count instances", err)
	}
	var rows []struct {
		Type string `db:"type"`
		N    int    `db:"n"`
	}
	// Per stream, the version of its latest terminal event, then that
	// event's type; (stream, version) is the table's unique key.
	err = sqlx.SelectContext(ctx, q, &rows, q.Rebind(`SELECT e.type, COUNT(*) AS n FROM `+eventsTable+` AS e
JOIN (SELECT stream, MAX(version) AS version FROM `+eventsTable+`
	WHERE stream > ? AND stream < ? AND type IN (?, ?, ?, ?) GROUP BY stream) AS last
ON e.stream = last.stream AND e.version = last.version
GROUP BY e.type`),
		streamPrefix, "workflow0", "orchestration.Completed", "orchestration.Failed", "orchestration.Cancelled", "orchestration.Stuck")
	if err != nil {
		return counts, wrapInspect("count instances", err)
	}
	counts[Running] = instances
	for _, r := range rows {
		counts[terminalTypes[r.Type]] += r.N
		counts[Running] -= r.N
	}
	return counts, nil
}

func wrapInspect(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("orchestration: %s: %w", what, err)
}
