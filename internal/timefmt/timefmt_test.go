package timefmt_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/timefmt"
)

func TestFormatRoundTripsOffsetsWithSeconds(t *testing.T) {
	t.Parallel()
	monrovia, err := time.LoadLocation("Africa/Monrovia")
	require.NoError(t, err)
	warsaw, err := time.LoadLocation("Europe/Warsaw")
	require.NoError(t, err)
	for _, c := range []struct {
		at   time.Time
		want string
	}{
		{time.Date(1960, 1, 1, 0, 0, 0, 0, monrovia), "1960-01-01T00:00:00-00:44:30"},
		{time.Date(1960, 1, 1, 0, 0, 0, 5, monrovia), "1960-01-01T00:00:00.000000005-00:44:30"},
		{time.Date(1973, 1, 1, 0, 0, 0, 0, monrovia), "1973-01-01T00:00:00Z"},
		{time.Date(2026, 3, 29, 3, 0, 0, 0, warsaw), "2026-03-29T03:00:00+02:00"},
		{time.Date(2026, 3, 29, 3, 0, 0, 0, time.UTC), "2026-03-29T03:00:00Z"},
	} {
		got := timefmt.Format(c.at)
		require.Equal(t, c.want, got)
		require.Equal(t, c.want, string(timefmt.Append(nil, c.at)))
		back, err := timefmt.Parse(got)
		require.NoError(t, err, got)
		require.True(t, back.Equal(c.at), "%s read back as %s", got, back)
		_, wantOff := c.at.Zone()
		_, gotOff := back.Zone()
		require.Equal(t, wantOff, gotOff, got)
		// The standard layout loses the seconds of the offset: the reason
		// Format exists.
		if wantOff%60 != 0 {
			lossy, err := time.Parse(time.RFC3339, c.at.Format(time.RFC3339))
			require.NoError(t, err)
			require.False(t, lossy.Equal(c.at))
		}
	}
	_, err = timefmt.Parse("2026-03-29 03:00")
	require.ErrorContains(t, err, `"2026-03-29 03:00" is not an RFC 3339 instant`)
}
