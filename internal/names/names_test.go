package names_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/names"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	for name, reason := range map[string]string{
		"":                     "empty",
		strings.Repeat("a", 9): "9 bytes, at most 8 allowed",
		"a\xffb":               "not valid UTF-8",
		".":                    "cannot be carried in a URL path",
		"..":                   "cannot be carried in a URL path",
		"a\x00b":               "control character U+0000",
		"tab\there":            "control character U+0009",
		"del\x7f":              "control character U+007F",
		"c1\u0085":             "control character U+0085",
	} {
		err := names.Check(name, 8)
		require.ErrorContains(t, err, reason, "%q", name)
	}
	for _, ok := range []string{"a", "...", ".a", "a.", "Équipe", "a b", "a/b", "%2e", strings.Repeat("é", 4)} {
		require.NoError(t, names.Check(ok, 8), "%q", ok)
	}
}

// TestDotSegmentsAreWhatURLsResolve checks the rule against net/url's
// resolution of a reference, which follows RFC 3986: a name is refused
// exactly when the path /x/NAME, its segment escaped as a browser would,
// does not resolve to itself.
func TestDotSegmentsAreWhatURLsResolve(t *testing.T) {
	t.Parallel()
	base, err := url.Parse("http://example.test/x/")
	require.NoError(t, err)
	for _, name := range []string{".", "..", "...", ".a", "a", "..a", "a..", "-"} {
		ref, err := url.Parse(url.PathEscape(name))
		require.NoError(t, err)
		resolved := base.ResolveReference(ref).Path
		survives := resolved == "/x/"+name
		refused := names.Check(name, 200) != nil
		require.Equal(t, !survives, refused, "%q resolves to %q", name, resolved)
	}
}
