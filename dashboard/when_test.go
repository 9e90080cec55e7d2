package dashboard

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRelativeTimes(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)
	for _, c := range []struct {
		at   time.Duration
		want string
	}{
		{0, "now"},
		{999 * time.Millisecond, "now"},
		{-40 * time.Second, "40 s ago"},
		{40*time.Second + 900*time.Millisecond, "in 40 s"},
		{-5*time.Minute - 59*time.Second, "5 min ago"},
		{3*time.Hour + 59*time.Minute, "in 3 h"},
		{-47 * time.Hour, "47 h ago"},
		{-50 * time.Hour, "2 d ago"},
		{400 * 24 * time.Hour, "in 400 d"},
	} {
		require.Equal(t, c.want, relative(now.Add(c.at), now), "%s", c.at)
	}
}

// A time prints relative to the page's now, the exact instant to the
// second in its own zone on hover; nil and zero print "-".
func TestWhenShowsTheExactInstantOnHover(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)
	warsaw, err := time.LoadLocation("Europe/Warsaw")
	require.NoError(t, err)
	at := now.Add(-3*time.Minute - 123456789*time.Nanosecond).In(warsaw)
	require.Equal(t, `<time datetime="2026-11-20T10:26:59+01:00" title="2026-11-20T10:26:59+01:00">3 min ago</time>`,
		string(when(Time{Time: at}, clock{Now: now})))
	require.Equal(t, "-", string(when((*Time)(nil), clock{Now: now})))
	require.Equal(t, "-", string(when(time.Time{}, clock{Now: now})))
}
