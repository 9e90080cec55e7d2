package dashboard_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
)

// A POST body over 1 MiB is refused with 413, naming the limit, before
// anything is done: the signal is not sent, the login not checked.
func TestABodyOverTheLimitIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t, dashboard.WithAdminToken(testToken))
	bearer := http.Header{"Authorization": {"Bearer " + testToken}}
	big := strings.Repeat(" ", 1<<20)

	res, body := post(t, srv.URL+"/workflows/order-1/signal", url.Values{"name": {"paid"}, "payload": {`"pay_1"` + big}}, bearer)
	require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, body)
	require.Contains(t, body, "over the limit of 1048576 bytes (1 MiB)")
	_, page := getPage(t, srv.URL+"/api/workflows/order-1")
	require.NotContains(t, page, "signal paid received", "the signal of a refused body was sent")

	res, body = post(t, srv.URL+"/login", url.Values{"token": {testToken}, "back": {"/" + big}}, nil)
	require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, body)
	require.Empty(t, res.Cookies(), "a refused body started a session")

	// Just under the limit is read.
	res, body = post(t, srv.URL+"/workflows/order-1/signal", url.Values{"name": {"paid"}, "payload": {`"pay_1"` + big[:1<<19]}}, bearer)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
}

// A body that stops coming is given up on at the read deadline (10 s, made
// short here) with 408, instead of holding the connection for as long as
// the client likes.
func TestABodySentTooSlowlyIsGivenUpOn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t, dashboard.WithAdminToken(testToken), dashboard.WithBodyTimeout(300*time.Millisecond))
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer conn.Close()
	// 100 bytes announced, 10 sent, then nothing.
	_, err = fmt.Fprintf(conn, "POST /workflows/order-1/signal HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nname=paid&", u.Host, testToken)
	require.NoError(t, err)
	begin := time.Now()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "no answer within 5 s: the body's read deadline was not set")
	body, _ := io.ReadAll(res.Body)
	require.Equal(t, http.StatusRequestTimeout, res.StatusCode, string(body))
	require.Contains(t, string(body), "not sent within 300ms")
	require.Less(t, time.Since(begin), 3*time.Second)
}
