package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// A snapshot read back names, of what is there now, only what was not
// there when it was taken.
func TestNewSinceASnapshot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "before")
	require.NoError(t, os.WriteFile(path, []byte("database postgres\nschema kept\n\nstream KEPT\n"), 0o600))
	before, err := readSnapshot(path)
	require.NoError(t, err)
	now := []string{"database postgres", "schema kept", "schema test_1", "stream KEPT", "stream PASSAGE_TEST_1", "table public.t"}
	require.Equal(t, []string{"schema test_1", "stream PASSAGE_TEST_1", "table public.t"}, newSince(now, before))
	require.Empty(t, newSince(now[:2], before))
}

// What a test leaves on the servers — a schema, a table in public, a
// stream — is listed while it is there, and not once it is gone. (Other
// tests may create and drop their own meanwhile: only this test's
// objects are looked for.)
func TestListNamesWhatATestLeaves(t *testing.T) {
	pg, natsURL := os.Getenv("PASSAGE_TEST_POSTGRES"), os.Getenv("PASSAGE_TEST_NATS")
	if pg == "" || natsURL == "" {
		t.Skip("PASSAGE_TEST_POSTGRES and PASSAGE_TEST_NATS are not both set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	db, err := sqldb.Open(ctx, pg)
	require.NoError(t, err)
	defer db.Close()
	nc, err := nats.Connect(natsURL)
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	schema, table, stream := "leftovers_"+id, "leftovers_"+id, "LEFTOVERS_"+strings.ToUpper(id)
	drop := func() {
		_, err := db.ExecContext(ctx, `DROP SCHEMA IF EXISTS `+schema)
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, `DROP TABLE IF EXISTS public.`+table)
		require.NoError(t, err)
		if err := js.DeleteStream(ctx, stream); err != nil {
			require.ErrorIs(t, err, jetstream.ErrStreamNotFound)
		}
	}
	defer drop() // if the test fails before its own drop
	_, err = db.ExecContext(ctx, `CREATE SCHEMA `+schema)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `CREATE TABLE public.`+table+` (id int)`)
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{"leftovers." + id}, Storage: jetstream.MemoryStorage})
	require.NoError(t, err)
	mine := func() []string {
		all, err := list(ctx, pg, natsURL)
		require.NoError(t, err)
		var objs []string
		for _, o := range all {
			if strings.Contains(strings.ToLower(o), id) {
				objs = append(objs, o)
			}
		}
		return objs
	}

	require.Equal(t, []string{"schema " + schema, "stream " + stream, "table public." + table}, mine())
	drop()
	require.Empty(t, mine())
}
