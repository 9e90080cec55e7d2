package natsjs_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/tick"
)

func itoa(i int) string { return strconv.Itoa(i) }

// passageIn reads a stored boundary's data (a CloudEvent's body, as
// docs/events.md gives its fields) back into a tick.Passage.
func passageIn(t *testing.T, data []byte) tick.Passage {
	t.Helper()
	var v struct {
		Boundary  tick.JSONTime  `json:"boundary"`
		Previous  *tick.JSONTime `json:"previous"`
		EmittedAt tick.JSONTime  `json:"emitted_at"`
		CatchUp   bool           `json:"catch_up"`
	}
	require.NoError(t, json.Unmarshal(data, &v), string(data))
	p := tick.Passage{At: v.Boundary.Time, EmittedAt: v.EmittedAt.Time, CatchUp: v.CatchUp}
	if v.Previous != nil {
		p.Since = v.Previous.Time
	}
	return p
}
