package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRunTellsTheStoryAndSummary(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	err := run(context.Background(), []string{"-orders", "8", "-paid", "0.25", "-db", filepath.Join(t.TempDir(), "demo.db")}, &out)
	require.NoError(t, err)
	require.Contains(t, out.String(), "8 clients confirm their carts")
	require.Contains(t, out.String(), "paid                       2")
	require.Contains(t, out.String(), "cancelled by timeout       6")
}

func TestRunWithoutPaymentsOnATemporaryDatabase(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-orders", "3", "-paid", "0"}, &out))
	require.Contains(t, out.String(), "cancelled by timeout       3")
}

func TestRunRejectsBadFlags(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.ErrorContains(t, run(context.Background(), []string{"-orders", "many"}, &out), `invalid value "many" for flag -orders`)
	require.ErrorContains(t, run(context.Background(), []string{"-paid", "2", "-db", filepath.Join(t.TempDir(), "x.db")}, &out), "paid share must be between 0 and 1")
	for _, n := range []string{"0", "-3", "1000001"} {
		require.ErrorContains(t, run(context.Background(), []string{"-orders", n}, &out), "-orders "+n+": must be between 1 and 1000000")
	}
	require.Empty(t, out.String(), "nothing runs")
}
