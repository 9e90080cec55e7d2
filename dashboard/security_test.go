package dashboard_test

import (
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/dashboard"
)

// Issue 27 point 4: any website could read the dashboard through a DNS
// name it pointed at the server (rebinding), since the Host header was
// never checked. Only IP addresses, localhost and the allowed names are
// answered; the others get 421 before anything is read.
func TestOnlyTheAllowedHostNamesAreAnswered(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t, dashboard.WithAllowedHosts("dash.example.com", ".ops.example"))
	for host, want := range map[string]int{
		"":                          http.StatusOK, // the server's 127.0.0.1:port
		"localhost":                 http.StatusOK,
		"LOCALHOST.:8080":           http.StatusOK,
		"app.localhost":             http.StatusOK,
		"[::1]:9090":                http.StatusOK,
		"dash.example.com":          http.StatusOK,
		"dash.example.com:443":      http.StatusOK,
		"eu.ops.example":            http.StatusOK,
		"rebind.attacker.example":   http.StatusMisdirectedRequest,
		"localhost.attacker.test":   http.StatusMisdirectedRequest,
		"evildash.example.com":      http.StatusMisdirectedRequest,
		"ops.example":               http.StatusMisdirectedRequest,
		"dash.example.com.evil.com": http.StatusMisdirectedRequest,
	} {
		for _, path := range []string{"/", "/api/status", "/workflows/order-1"} {
			req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
			require.NoError(t, err)
			if host != "" {
				req.Host = host
			}
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			require.NoError(t, res.Body.Close())
			require.Equal(t, want, res.StatusCode, "Host %q %s: %s", host, path, body)
			if want != http.StatusOK {
				require.NotContains(t, string(body), "order-1", "nothing read for a foreign host")
			}
		}
	}
	_, err := dashboard.New(f.db.DB, dashboard.WithAllowedHosts("https://dash.example.com"))
	require.ErrorIs(t, err, dashboard.ErrInvalidOption)
}

// The same in a browser: a name that resolves to the server but is not
// allowed (what a rebinding attack gives another site) shows nothing of
// the dashboard; an allowed name shows it.
func TestBrowserARebindingNameReadsNothing(t *testing.T) {
	ctx := browser(t, chromedp.Flag("host-resolver-rules", "MAP rebind.attacker.example 127.0.0.1, MAP dash.example.com 127.0.0.1"))
	f := newFixture(t, newSQLite(t))
	srv := f.serve(t, dashboard.WithRefresh(0), dashboard.WithAllowedHosts("dash.example.com"))
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("http://rebind.attacker.example:"+u.Port()+"/api/status")))
	body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	require.NoError(t, err)
	require.Contains(t, body, "does not answer for this host name")
	require.NotContains(t, body, "replica-a", "no status read through the rebinding name")

	units := text(t, ctx, "http://dash.example.com:"+u.Port()+"/", "#lease")
	require.Contains(t, units, "replica-a")
	shoot(t, ctx, "allowed-host")
}
