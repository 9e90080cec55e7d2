package dashboard_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
)

// Pause and resume say "paused" and "resumed" (they said "pausd" and
// "resumd"); a trigger says where its run went when told.
func TestActionMessagesReadRight(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t, dashboard.WithAdminToken(testToken), dashboard.WithTriggerNote(", recorded in the outbox"))
	bearer := http.Header{"Authorization": {"Bearer " + testToken}}
	for verb, want := range map[string]string{"pause": `"paused poll"`, "resume": `"resumed poll"`, "trigger": `, recorded in the outbox"`} {
		res, body := post(t, srv.URL+"/schedules/poll/"+verb, nil, bearer)
		require.Equal(t, http.StatusOK, res.StatusCode, body)
		require.Contains(t, body, want)
	}
}

// The lag history is sampled on Start's timer alone: page views used to
// add samples, and 30 s of views replaced two hours of history.
func TestPageViewsDoNotSampleTheLag(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t, dashboard.WithLagSampling(time.Minute, 10))
	for range 30 {
		code, _ := getPage(t, srv.URL+"/")
		require.Equal(t, http.StatusOK, code)
	}
	var lag []dashboard.LagSample
	require.Equal(t, http.StatusOK, get(t, srv.URL+"/api/lag", &lag))
	require.Empty(t, lag, "no Start, no samples, however many views")
}
