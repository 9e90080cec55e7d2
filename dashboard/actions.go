package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Errors an action answers with; each is matched to a status code.
var (
	// ErrReadOnly refuses every action of a dashboard without an admin
	// token (403).
	ErrReadOnly = errors.New("dashboard: read-only: no admin token is configured (start it with --admin-token or PASSAGE_ADMIN_TOKEN to allow actions)")
	// ErrNotAdmin refuses an action whose request does not prove it
	// knows the admin token (403).
	ErrNotAdmin = errors.New("dashboard: forbidden: log in with the admin token, or send it as Authorization: Bearer <token>")
	// ErrWrongToken refuses a login with a wrong token (403).
	ErrWrongToken = errors.New("dashboard: wrong admin token")
	// ErrTooManyAttempts refuses a login or bearer token from a client
	// that made too many wrong attempts, without checking it (429).
	ErrTooManyAttempts = errors.New("dashboard: too many wrong attempts at the admin token from this address: wait and try again")
)

// actionFunc does one action and says what it did, for the log and the
// page it returns to; code is the HTTP status of a refusal.
type actionFunc func(r *http.Request) (done string, back string, code int, err error)

// action wraps an actionFunc: refuse without a token or without proof of
// it, then log what was asked and how it ended.
func (d *Dashboard) action(f actionFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.token == "" {
			d.refused(r, "read-only")
			d.fail(w, r, http.StatusForbidden, ErrReadOnly)
			return
		}
		switch d.authenticate(r) {
		case authAdmin:
		case authLimited:
			d.limited(w, r)
			return
		default:
			d.refused(r, "not admin")
			d.fail(w, r, http.StatusForbidden, ErrNotAdmin)
			return
		}
		done, back, code, err := f(r)
		if err != nil {
			d.logger.Warn("dashboard: action failed", "path", r.URL.Path, "remote", r.RemoteAddr, "error", err)
			var fe *formError
			if errors.As(err, &fe) && code < 500 && !isAPI(r) && strings.Contains(r.Header.Get("Accept"), "text/html") {
				fe.refill(w, r, code, fe.err)
				return
			}
			d.fail(w, r, code, err)
			return
		}
		d.logger.Info("dashboard: action", "path", r.URL.Path, "remote", r.RemoteAddr, "done", done)
		if isAPI(r) {
			writeJSON(w, http.StatusOK, map[string]string{"done": done})
			return
		}
		http.Redirect(w, r, d.base+withQuery(back, d.doneQuery(done)), http.StatusSeeOther)
	})
}

// login checks the token a browser posts and starts a session: a random
// id kept in memory until it expires (WithSessionTTL) or its browser logs
// out. Its cookie is HttpOnly (scripts never see it), SameSite=Strict (no
// other site's request carries it) and Secure over TLS or with
// WithSecureCookie.
func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	if d.token == "" {
		d.refused(r, "read-only")
		d.fail(w, r, http.StatusForbidden, ErrReadOnly)
		return
	}
	if !d.mayAttempt(r) {
		d.limited(w, r)
		return
	}
	if !d.tokenIs(r.PostFormValue("token")) {
		d.wrongAttempt(r)
		d.refused(r, "wrong token")
		d.fail(w, r, http.StatusForbidden, ErrWrongToken)
		return
	}
	d.logger.Info("dashboard: login", "remote", r.RemoteAddr)
	now := d.clock.Now()
	id := d.sessions.start(now, now.Add(d.sessionTTL))
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: d.base + "/", HttpOnly: true,
		MaxAge: int(d.sessionTTL.Seconds()), SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || d.secureCookie})
	http.Redirect(w, r, d.base+localPath(r.PostFormValue("back")), http.StatusSeeOther)
}

// logout ends the browser's session on the server, so its cookie is
// worth nothing even if it was copied, and clears the cookie.
func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		d.sessions.end(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: d.base + "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || d.secureCookie})
	http.Redirect(w, r, d.base+localPath(r.PostFormValue("back")), http.StatusSeeOther)
}

// limited answers a client out of attempts at the token: 429, and when
// it may try again.
func (d *Dashboard) limited(w http.ResponseWriter, r *http.Request) {
	d.refused(r, "too many attempts")
	w.Header().Set("Retry-After", fmt.Sprint(int(attemptEvery.Seconds())))
	d.fail(w, r, http.StatusTooManyRequests, ErrTooManyAttempts)
}

// formError is the error of an action whose form a person typed: a
// browser gets the form's page back with what was typed and the error,
// not an error page that loses it.
type formError struct {
	err    error
	refill func(w http.ResponseWriter, r *http.Request, code int, err error)
}

func (e *formError) Error() string { return e.err.Error() }
func (e *formError) Unwrap() error { return e.err }
