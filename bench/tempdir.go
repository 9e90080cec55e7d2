package main

import "os"

// tempDir makes a directory for the SQLite files of a run.
func tempDir() (string, func(), error) {
	dir, err := os.MkdirTemp("", "passage-bench-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}
