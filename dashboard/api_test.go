package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
)

func TestActionsNeedTheTokenAndTheSameOrigin(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	readOnly := f.serve(t)
	writable := f.serve(t, dashboard.WithAdminToken(testToken))
	post := func(base, path, bearer string, header map[string]string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(""))
		require.NoError(t, err)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	code, body := post(readOnly.URL, "/schedules/poll/pause", testToken, nil)
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, body, "read-only")
	code, body = post(writable.URL, "/schedules/poll/pause", "", nil)
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, body, "forbidden")
	code, _ = post(writable.URL, "/schedules/poll/pause", "wrong-token-wrong-token", nil)
	require.Equal(t, http.StatusForbidden, code)
	// A browser's cross-site POST is refused even with the token.
	code, _ = post(writable.URL, "/schedules/poll/pause", testToken, map[string]string{"Sec-Fetch-Site": "cross-site"})
	require.Equal(t, http.StatusForbidden, code)
	code, _ = post(writable.URL, "/schedules/poll/pause", testToken, map[string]string{"Origin": "https://evil.example"})
	require.Equal(t, http.StatusForbidden, code)
	stored := schedules(t, f)
	require.False(t, stored["poll"], "a refused pause paused poll")

	code, body = post(writable.URL, "/schedules/poll/pause", testToken, nil)
	require.Equal(t, http.StatusOK, code, body)
	require.True(t, schedules(t, f)["poll"])
	code, body = post(writable.URL, "/schedules/nothing/pause", testToken, nil)
	require.Equal(t, http.StatusNotFound, code, body)
}

// schedules reads which schedules are paused.
func schedules(t *testing.T, f *fixture) map[string]bool {
	t.Helper()
	all, err := f.scheduler.List(context.Background())
	require.NoError(t, err)
	out := map[string]bool{}
	for _, s := range all {
		out[s.Name] = s.Paused
	}
	return out
}
