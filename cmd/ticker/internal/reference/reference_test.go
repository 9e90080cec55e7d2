package reference_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/reference"
)

// update rewrites docs/reference instead of checking it:
// go test ./cmd/ticker/internal/reference -run TestTheReferenceIsCurrent -update
var update = flag.Bool("update", false, "rewrite docs/reference from the commands")

// committed is the reference in the repository, from this directory.
const committed = "../../../../docs/reference"

// The committed flag reference is byte for byte what the commands
// generate now, page for page: a flag added, renamed or re-worded without
// "go generate ./cmd/ticker" fails here.
func TestTheReferenceIsCurrent(t *testing.T) {
	if *update {
		require.NoError(t, os.RemoveAll(committed))
		require.NoError(t, reference.Write(committed))
	}
	fresh := t.TempDir()
	require.NoError(t, reference.Write(fresh))
	want := pages(t, fresh)
	got := pages(t, committed)
	require.NotEmpty(t, want)
	for name, page := range want {
		require.Contains(t, got, name, "docs/reference/%s is missing: run go generate ./cmd/ticker", name)
		require.Equal(t, page, got[name], "docs/reference/%s is not what the commands generate: run go generate ./cmd/ticker", name)
	}
	for name := range got {
		require.Contains(t, want, name, "docs/reference/%s documents no command: run go generate ./cmd/ticker", name)
	}
}

// Generating twice gives the same bytes: no date, no map order.
func TestTheReferenceIsTheSameEveryTime(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	require.NoError(t, reference.Write(a))
	require.NoError(t, reference.Write(b))
	require.Equal(t, pages(t, a), pages(t, b))
}

// pages reads every file of dir by name.
func pages(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(b)
	}
	return out
}
