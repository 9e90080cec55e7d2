package sqldbtest

import (
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// MakeReadOnly makes the file at path unwritable to this process until the
// returned function is called (or the test ends), and skips the test when
// that cannot be done here. chmod is enough for an ordinary user; root
// writes through any mode, so as root the file is made immutable
// (chattr +i), which stops root too. Either way an open for writing is
// tried afterwards: the test only runs when the file really is read-only.
func MakeReadOnly(t testing.TB, path string) (restore func()) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("make %s read-only: %v", path, err)
	}
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatalf("make %s read-only: %v", path, err)
	}
	immutable := false
	restore = func() {
		if immutable {
			if err := exec.Command("chattr", "-i", path).Run(); err != nil {
				t.Fatalf("make %s writable again: chattr -i: %v", path, err)
			}
			immutable = false
		}
		if err := os.Chmod(path, info.Mode().Perm()); err != nil {
			t.Fatalf("make %s writable again: %v", path, err)
		}
	}
	t.Cleanup(func() {
		if immutable {
			_ = exec.Command("chattr", "-i", path).Run()
		}
	})
	if !writable(path) {
		return restore
	}
	out, err := exec.Command("chattr", "+i", path).CombinedOutput()
	if err == nil {
		immutable = true
	}
	if writable(path) {
		restore()
		t.Skipf("cannot make %s read-only for this process (chmod 0444 does not stop root; chattr +i: %v %s)", path, err, out)
	}
	return restore
}

// writable asks the kernel whether this process may write path, with
// access(2) rather than an open: the test has SQLite connections to the
// file, and closing a descriptor of it would release every POSIX lock the
// process holds on it. access(2) answers for root as an open would: yes
// through any mode, no for an immutable file or a read-only mount.
func writable(path string) bool {
	return unix.Access(path, unix.W_OK) == nil
}
