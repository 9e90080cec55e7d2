package dashboard_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
)

// Issue 27 point 5: the session cookie was a fixed HMAC of the token:
// the same at every login, never expiring, still good after logout. Each
// login now starts a random session that expires and ends at logout.
func TestSessionsAreRandomExpireAndEndAtLogout(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t, dashboard.WithAdminToken(testToken), dashboard.WithSessionTTL(time.Hour))
	login := func() *http.Cookie {
		res, body := post(t, srv.URL+"/login", url.Values{"token": {testToken}, "back": {"/schedules"}}, nil)
		require.Equal(t, http.StatusSeeOther, res.StatusCode, body)
		return sessionOf(t, res)
	}
	pause := func(c *http.Cookie) int {
		res, _ := post(t, srv.URL+"/schedules/poll/pause", nil, withCookie(c))
		return res.StatusCode
	}
	a, b := login(), login()
	require.NotEqual(t, a.Value, b.Value, "each login has a session of its own")
	require.Equal(t, 3600, a.MaxAge, "the cookie expires with the session")
	require.True(t, a.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, a.SameSite)
	require.False(t, a.Secure, "plain HTTP, no WithSecureCookie")
	require.Equal(t, http.StatusSeeOther, pause(a))
	require.Equal(t, http.StatusSeeOther, pause(b))

	// Logging out ends the session on the server: its cookie, kept by
	// whoever copied it, no longer works; the other session still does.
	res, _ := post(t, srv.URL+"/logout", url.Values{"back": {"/"}}, withCookie(a))
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, http.StatusForbidden, pause(a), "a logged-out session is refused")
	require.Equal(t, http.StatusSeeOther, pause(b))

	// A session expires on the server too, whatever the browser keeps.
	f.clock.Advance(time.Hour)
	require.Equal(t, http.StatusForbidden, pause(b), "an expired session is refused")

	// Behind a proxy that ends TLS, the cookie is marked Secure.
	secure := f.serve(t, dashboard.WithAdminToken(testToken), dashboard.WithSecureCookie(true))
	res, body := post(t, secure.URL+"/login", url.Values{"token": {testToken}}, nil)
	require.Equal(t, http.StatusSeeOther, res.StatusCode, body)
	require.True(t, sessionOf(t, res).Secure)
}
