package sqldb_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// TestAProcessKeepsItsLocksOnTheDatabaseFile: after a pool has opened
// several connections and served reads and writes, the process holds a
// shared lock on the database file, as a plain SQLite connection does.
// Another process that opens and closes the file (the sqlite3 shell, a
// backup script) then finds itself not the last one out and leaves the
// WAL in place, and from there each process sees the other's writes at
// once, and both survive both stopping.
//
// When the pool opened the file from Go for each new connection (to see
// whether it was writable), closing that descriptor released every lock
// the process held on the file; the other process deleted the WAL on its
// way out and the two wrote two databases.
func TestAProcessKeepsItsLocksOnTheDatabaseFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "passage.db")
	db, err := sqldb.Open(ctx, path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.ExecContext(ctx, `CREATE TABLE notes (body TEXT NOT NULL)`)
	require.NoError(t, err)

	// Four connections at once, so the pool opens new ones while the
	// earlier ones hold their locks; each reads and writes.
	var wg sync.WaitGroup
	conns := make([]*sql.Conn, 4)
	for i := range conns {
		conns[i], err = db.Conn(ctx)
		require.NoError(t, err)
	}
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n int
			require.NoError(t, c.QueryRowContext(ctx, `SELECT COUNT(*) FROM notes`).Scan(&n))
			_, err := c.ExecContext(ctx, `INSERT INTO notes (body) VALUES (?)`, fmt.Sprintf("pooled %d", i))
			require.NoError(t, err)
		}()
	}
	wg.Wait()
	for _, c := range conns {
		require.NoError(t, c.Close())
	}

	// The reference: what a plain SQLite connection in another process
	// holds while it has the file open.
	holder := startPlainClient(t, path, "hold")
	plainLocks := fileLocks(t, path, holder.pid)
	require.NotEmpty(t, plainLocks, "a plain SQLite connection holds a lock on the file (the way this test reads /proc/locks)")
	holder.finish(t)

	require.Subset(t, lockKinds(fileLocks(t, path, os.Getpid())), lockKinds(plainLocks),
		"this process holds the locks a plain SQLite connection holds on the file")

	// Another process opens the file, reads and closes it: not the last
	// one out, it leaves the WAL.
	require.Equal(t, "4", startPlainClient(t, path, "count").finish(t))
	_, err = os.Stat(path + "-wal")
	require.NoError(t, err, "the WAL is still there after another process closed the file")

	// Each sees the other's writes at once.
	_, err = db.ExecContext(ctx, `INSERT INTO notes (body) VALUES ('from the pool')`)
	require.NoError(t, err)
	require.Equal(t, "from the pool", startPlainClient(t, path, "last").finish(t))
	require.Equal(t, "ok", startPlainClient(t, path, "write").finish(t))
	var last string
	require.NoError(t, db.GetContext(ctx, &last, `SELECT body FROM notes ORDER BY rowid DESC LIMIT 1`))
	require.Equal(t, "from another process", last)

	// Both stopped: both writes are in the file.
	require.NoError(t, db.Close())
	require.Equal(t, "6", startPlainClient(t, path, "count").finish(t))
	require.Equal(t, "from another process", startPlainClient(t, path, "last").finish(t))
}

// plainClient is the sqlite3 shell, another program with the file open.
type plainClient struct {
	cmd   *exec.Cmd
	pid   int
	stdin io.WriteCloser
	out   *bufio.Reader
}

// plainQueries are what the shell is asked to do.
var plainQueries = map[string]string{
	"count": `SELECT COUNT(*) FROM notes;`,
	"last":  `SELECT body FROM notes ORDER BY rowid DESC LIMIT 1;`,
	"write": `INSERT INTO notes (body) VALUES ('from another process'); SELECT 'ok';`,
}

// startPlainClient starts the sqlite3 shell on path, asks it what
// (plainQueries) and, for "hold", returns once the shell has the file open
// and has read; finish ends it.
func startPlainClient(t *testing.T, path, what string) *plainClient {
	t.Helper()
	shell, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Skip("no sqlite3 shell to stand for another program (Debian: apt-get install sqlite3)")
	}
	cmd := exec.Command(shell, "-batch", path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	c := &plainClient{cmd: cmd, pid: cmd.Process.Pid, stdin: stdin, out: bufio.NewReader(stdout)}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	query := plainQueries[what]
	if what == "hold" {
		query = plainQueries["count"]
	}
	_, err = io.WriteString(stdin, query+"\n")
	require.NoError(t, err)
	if what == "hold" {
		// The shell answers as soon as it has read: it has the file open.
		_, err := c.out.ReadString('\n')
		require.NoError(t, err)
	}
	return c
}

// finish closes the shell's input, so that it closes the file and ends,
// and returns the last line it printed.
func (c *plainClient) finish(t *testing.T) string {
	t.Helper()
	require.NoError(t, c.stdin.Close())
	out, err := io.ReadAll(c.out)
	require.NoError(t, err)
	require.NoError(t, c.cmd.Wait(), "the sqlite3 shell: %s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// fileLocks lists the POSIX locks pid holds on the file at path, from
// /proc/locks, as "KIND START-END" (KIND READ or WRITE).
func fileLocks(t *testing.T, path string, pid int) []string {
	t.Helper()
	info, err := os.Stat(path) // a stat, not an open: no lock is released
	require.NoError(t, err)
	inode := info.Sys().(*syscall.Stat_t).Ino
	data, err := os.ReadFile("/proc/locks")
	require.NoError(t, err)
	var locks []string
	for _, line := range strings.Split(string(data), "\n") {
		// 1: POSIX  ADVISORY  READ 1234 08:01:5678 1073741826 1073742335
		f := strings.Fields(line)
		if len(f) < 8 || f[1] != "POSIX" || f[4] != strconv.Itoa(pid) {
			continue
		}
		if !strings.HasSuffix(f[5], ":"+strconv.FormatUint(inode, 10)) {
			continue
		}
		locks = append(locks, f[3]+" "+f[6]+"-"+f[7])
	}
	return locks
}

// lockKinds is the set of locks, as fileLocks lists them, without repeats.
func lockKinds(locks []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range locks {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}
