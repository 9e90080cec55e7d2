package schedule

import "github.com/passage-of-time/passage/internal/sqldb"

// component is the name the schema's migrations are recorded under.
const component = "schedule"

// listName is the to-do list holding every schedule's next slot.
const listName = "passage-schedules"

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
