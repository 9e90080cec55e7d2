package dashboard_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Every page prints its times relative to now, the exact instant (RFC
// 3339 to the second) on hover; no page prints fractions of a second,
// even at a now that has them.
func TestPagesPrintTimesRelativeWithTheInstantOnHover(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newSQLite(t))
	srv := f.serveAt(t, start.Add(123456789*time.Nanosecond))
	fraction := regexp.MustCompile(`\d\d:\d\d:\d\d[.,]\d`)
	for _, c := range []struct{ page, want string }{
		{"/", `<time datetime="2026-11-20T09:27:00Z" title="2026-11-20T09:27:00Z">3 min ago</time>`},
		{"/", `<time datetime="2026-11-20T09:31:00Z" title="2026-11-20T09:31:00Z">in 59 s</time>`},
		{"/lists/pending-orders", `<time datetime="2026-11-20T07:39:00Z" title="2026-11-20T07:39:00Z">1 h ago</time>`},
		{"/schedules", `<time datetime="2026-11-20T12:00:00+01:00" title="2026-11-20T12:00:00+01:00">in 1 h</time>`},
		{"/workflows", `title="2026-11-20T09:30:00Z">now</time>`},
		{"/workflows/order-1", `title="2026-11-20T09:30:00Z">now</time>`},
		{"/lists", `<time datetime=`},
	} {
		code, body := getPage(t, srv.URL+c.page)
		require.Equal(t, 200, code, c.page)
		require.True(t, strings.Contains(body, c.want), "%s does not show %s", c.page, c.want)
		require.False(t, fraction.MatchString(body), "%s prints a fraction of a second: %s", c.page, fraction.FindString(body))
	}
}
