package tick

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
)

// NewHolderID returns a holder id for WithLease that no other process
// shares: "host:pid:random", the host name and process id for people
// reading the lease, and eight random hex digits because those two repeat —
// every container's main process is pid 1 and containers may share a host
// name, and two run-once processes on one machine (cron, --once) can
// overlap. Two replicas with one id would both think they hold the lease
// and both emit.
//
// Call it once per process and keep the id. A restarted process has a new
// one, so it does not renew its predecessor's lease: it takes the lease
// when that was released (Stop) or has expired. A host name that cannot be
// read is "ticker".
func NewHolderID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "ticker"
	}
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}
