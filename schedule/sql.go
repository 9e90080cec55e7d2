package schedule

import "github.com/passage-of-time/passage/internal/sqldb"

// The schema: one row per schedule (its spec's text and hash, the command
// it sends, its policies and its state), and one row per run. A run's slot
// id — the schedule's name and the slot's instant — is its primary key:
// the guard that fires each slot once among replicas and across crashes.
// The next slot itself is an item of the to-do list named listName, keyed
// by the schedule's name, so no timer is kept anywhere.
var migrations = []sqldb.Migration{{
	Version: 1,
	SQLite: `CREATE TABLE schedule_schedules (
	name      TEXT    NOT NULL PRIMARY KEY,
	spec      TEXT    NOT NULL,
	hash      TEXT    NOT NULL,
	command   TEXT    NOT NULL,
	payload   BLOB,
	catch_up  TEXT    NOT NULL,
	max_runs  INTEGER NOT NULL DEFAULT 0,
	until     INTEGER NOT NULL DEFAULT 0,
	paused    INTEGER NOT NULL DEFAULT 0,
	runs      INTEGER NOT NULL DEFAULT 0,
	skipped   INTEGER NOT NULL DEFAULT 0,
	next_slot INTEGER NOT NULL DEFAULT 0,
	jitter    INTEGER NOT NULL DEFAULT 0,
	overlap   TEXT    NOT NULL DEFAULT 'allow'
) WITHOUT ROWID;
CREATE TABLE schedule_runs (
	slot_id  TEXT    NOT NULL PRIMARY KEY,
	run_id   TEXT    NOT NULL UNIQUE,
	schedule TEXT    NOT NULL,
	slot     INTEGER NOT NULL,
	fired_at INTEGER NOT NULL,
	attempt  INTEGER NOT NULL,
	manual   INTEGER NOT NULL DEFAULT 0,
	finished INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX schedule_runs_by_schedule ON schedule_runs (schedule, slot);
CREATE INDEX schedule_runs_unfinished ON schedule_runs (schedule) WHERE finished = 0;`,
	Postgres: `CREATE TABLE schedule_schedules (
	name      TEXT    NOT NULL PRIMARY KEY,
	spec      TEXT    NOT NULL,
	hash      TEXT    NOT NULL,
	command   TEXT    NOT NULL,
	payload   BYTEA,
	catch_up  TEXT    NOT NULL,
	max_runs  BIGINT  NOT NULL DEFAULT 0,
	until     BIGINT  NOT NULL DEFAULT 0,
	paused    INTEGER NOT NULL DEFAULT 0,
	runs      BIGINT  NOT NULL DEFAULT 0,
	skipped   BIGINT  NOT NULL DEFAULT 0,
	next_slot BIGINT  NOT NULL DEFAULT 0,
	jitter    BIGINT  NOT NULL DEFAULT 0,
	overlap   TEXT    NOT NULL DEFAULT 'allow'
);
CREATE TABLE schedule_runs (
	slot_id  TEXT    NOT NULL PRIMARY KEY,
	run_id   TEXT    NOT NULL UNIQUE,
	schedule TEXT    NOT NULL,
	slot     BIGINT  NOT NULL,
	fired_at BIGINT  NOT NULL,
	attempt  INTEGER NOT NULL,
	manual   INTEGER NOT NULL DEFAULT 0,
	finished INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX schedule_runs_by_schedule ON schedule_runs (schedule, slot);
CREATE INDEX schedule_runs_unfinished ON schedule_runs (schedule) WHERE finished = 0;`,
}, {
	Version:  2,
	Postgres: `ALTER TABLE schedule_schedules SET (fillfactor = 50);`,
}}

// listName is the to-do list holding every schedule's next slot.
const listName = "passage-schedules"

const (
	selectSchedule = `SELECT name, spec, hash, command, payload, catch_up, max_runs, until, paused, runs, skipped, next_slot, jitter, overlap
FROM schedule_schedules WHERE name = ?`
	selectSchedules = `SELECT name, spec, hash, command, payload, catch_up, max_runs, until, paused, runs, skipped, next_slot, jitter, overlap
FROM schedule_schedules ORDER BY name`
	insertSchedule = `INSERT INTO schedule_schedules (name, spec, hash, command, payload, catch_up, max_runs, until, next_slot, jitter, overlap)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	updateDefinition = `UPDATE schedule_schedules
SET spec = ?, hash = ?, command = ?, payload = ?, catch_up = ?, max_runs = ?, until = ?, next_slot = ?, jitter = ?, overlap = ?
WHERE name = ?`
	insertRun = `INSERT INTO schedule_runs (slot_id, run_id, schedule, slot, fired_at, attempt, manual)
VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (slot_id) DO NOTHING`
	recordFired = `UPDATE schedule_schedules SET runs = runs + ?, skipped = skipped + ?, next_slot = ? WHERE name = ?`
	setPaused   = `UPDATE schedule_schedules SET paused = ?, next_slot = ? WHERE name = ?`
	deleteSched = `DELETE FROM schedule_schedules WHERE name = ?`
	unfinished  = `SELECT COUNT(*) FROM schedule_runs WHERE schedule = ? AND finished = 0`
	markRunning = `UPDATE schedule_runs SET finished = 0 WHERE run_id = ?`
	finishRun   = `UPDATE schedule_runs SET finished = 1 WHERE run_id = ? AND finished = 0`
	runByID     = `SELECT schedule, finished FROM schedule_runs WHERE run_id = ?`
)

// The set-wise statements of fireSet: each takes a chunk of a batch's
// rows, as arrays on PostgreSQL and as a list of rows on SQLite.
const (
	selectSchedulesIn = `SELECT name, spec, hash, command, payload, catch_up, max_runs, until, paused, runs, skipped, next_slot, jitter, overlap
FROM schedule_schedules WHERE name`
	unfinishedOf       = `SELECT schedule, COUNT(*) AS open FROM schedule_runs WHERE finished = 0 AND schedule`
	markRunningIn      = `UPDATE schedule_runs SET finished = 0 WHERE run_id`
	insertRunsPostgres = `INSERT INTO schedule_runs (slot_id, run_id, schedule, slot, fired_at, attempt, manual)
SELECT r.slot_id, r.run_id, r.schedule, r.slot, r.fired_at, r.attempt, 0
FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::int[]) AS r(slot_id, run_id, schedule, slot, fired_at, attempt)
ON CONFLICT (slot_id) DO NOTHING RETURNING slot_id`
	recordFiredPostgres = `UPDATE schedule_schedules AS s
SET runs = s.runs + f.runs, skipped = s.skipped + f.skipped, next_slot = f.next_slot
FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[]) AS f(name, runs, skipped, next_slot)
WHERE s.name = f.name`
)

// On PostgreSQL the set-wise reads take their names as an array joined
// with unnest, not as "name = ANY($1)": over a table the planner had no
// statistics for yet (one Sync had just filled it), ANY took 137 s to
// read back the hashes of 100,000 schedules in chunks of 10,000, as if
// each row were tested against the whole array; the join takes 0.5 s.
const (
	selectSchedulesOfPostgres = `SELECT name, spec, hash, command, payload, catch_up, max_runs, until, paused, runs, skipped, next_slot, jitter, overlap
FROM unnest($1::text[]) AS w(wanted) JOIN schedule_schedules ON name = wanted`
	unfinishedOfPostgres = `SELECT schedule, COUNT(*) AS open
FROM unnest($1::text[]) AS w(wanted) JOIN schedule_runs ON schedule = wanted WHERE finished = 0 GROUP BY schedule`
	selectHashesOfPostgres = `SELECT name, hash FROM unnest($1::text[]) AS w(wanted) JOIN schedule_schedules ON name = wanted`
)

// The set-wise statements of Sync (see syncAll).
const (
	selectHashesIn          = `SELECT name, hash FROM schedule_schedules WHERE name`
	insertSchedulesPostgres = `INSERT INTO schedule_schedules (name, spec, hash, command, payload, catch_up, max_runs, until, next_slot, jitter, overlap)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bytea[], $6::text[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::text[])
ON CONFLICT (name) DO NOTHING RETURNING name`
)

// insertSchedulesSQLite stores n new schedules, returning the names it
// inserted.
func insertSchedulesSQLite(n int) string {
	return `INSERT INTO schedule_schedules (name, spec, hash, command, payload, catch_up, max_runs, until, next_slot, jitter, overlap) VALUES ` +
		placeholders(n, "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)") + ` ON CONFLICT (name) DO NOTHING RETURNING name`
}

// insertRunsSQLite inserts n runs, returning the slot ids it inserted.
func insertRunsSQLite(n int) string {
	return `INSERT INTO schedule_runs (slot_id, run_id, schedule, slot, fired_at, attempt, manual) VALUES ` +
		placeholders(n, "(?, ?, ?, ?, ?, ?, 0)") + ` ON CONFLICT (slot_id) DO NOTHING RETURNING slot_id`
}

// recordFiredSQLite is recordFired for n schedules; a row of VALUES is
// named column1, column2, … by SQLite.
func recordFiredSQLite(n int) string {
	return `UPDATE schedule_schedules
SET runs = runs + f.column2, skipped = skipped + f.column3, next_slot = f.column4
FROM (VALUES ` + placeholders(n, "(?, ?, ?, ?)") + `) AS f
WHERE schedule_schedules.name = f.column1`
}
