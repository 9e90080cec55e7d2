package dashboard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// A server error (a 5xx) shows no detail: its text may hold SQL or a
// connection string, so it goes to the log under a short random
// reference, and the answer (fail, in render.go) or the summary says what
// happened in general and gives the reference.

// retryAfter is what a 503 tells a client to wait before trying again.
const retryAfter = 5 * time.Second

// hide logs a server error under a new reference and returns the status
// to answer, the reference and the error to show in its place.
func (d *Dashboard) hide(r *http.Request, code int, err error) (int, string, error) {
	ref := reference()
	if unavailable(r.Context(), err) {
		code = http.StatusServiceUnavailable
	}
	d.logger.Error("dashboard: server error", "reference", ref, "status", code, "method", r.Method, "path", r.URL.Path, "error", err)
	if code == http.StatusServiceUnavailable {
		return code, ref, fmt.Errorf("the database is busy or out of reach: try again in a few seconds (reference %s)", ref)
	}
	return code, ref, fmt.Errorf("the dashboard failed to answer; the server's log has the details under reference %s", ref)
}

// hidden is the text that stands for an error a page shows beside its
// data (the summary's): logged under a reference, the text says what
// could not be read and gives the reference.
func (d *Dashboard) hidden(ctx context.Context, what string, err error) string {
	ref := reference()
	d.logger.Error("dashboard: "+what, "reference", ref, "error", err)
	if unavailable(ctx, err) {
		return fmt.Sprintf("the database is busy or out of reach (reference %s)", ref)
	}
	return fmt.Sprintf("reading failed (reference %s)", ref)
}

// reference is a short random id tying an answer to its log line.
func reference() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// unavailable reports whether err means the database could not be had
// in time, rather than that something is wrong: the request's deadline
// passed (waiting for a pooled connection, say: see WithRequestTimeout),
// or the server refused or dropped the connection (PostgreSQL's "too
// many clients already", SQLSTATE 53300; one starting up or shutting
// down; a connection refused or broken; SQLite's "database is locked").
// Trying again later may work.
func unavailable(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return true // dialling or talking to the server failed
	}
	var coded interface{ SQLState() string } // pgconn.PgError
	if errors.As(err, &coded) {
		switch state := coded.SQLState(); {
		case state == "53300", // too_many_connections
			state == "53000",                // insufficient_resources
			strings.HasPrefix(state, "08"),  // connection exceptions
			strings.HasPrefix(state, "57P"): // admin shutdown, crash shutdown, cannot connect now
			return true
		}
	}
	text := err.Error()
	return strings.Contains(text, "too many clients") || strings.Contains(text, "database is locked")
}
