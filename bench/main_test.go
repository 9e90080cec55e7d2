package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestRun runs every scenario with tiny sizes, on SQLite and in memory only,
// and checks that each row was measured or skipped.
func TestRun(t *testing.T) {
	var out strings.Builder
	cfg := config{timeouts: 200, events: 1000, async: 1000, workflows: 5, gocronLead: 200 * time.Millisecond,
		riverPoll: 10 * time.Millisecond, riverCool: time.Millisecond, riverWork: 10, riverDefault: 100}
	if err := run(context.Background(), cfg, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"passage todolist, SQLite", "gocron/v2", "asaskevich/EventBus", "Watermill GoChannel", "go-workflows", "skipped: PostgreSQL not reachable"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
}
