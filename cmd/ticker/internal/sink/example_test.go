package sink_test

import (
	"fmt"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
)

// A webhook receiver checks X-Passage-Signature before trusting a body.
func ExampleVerify() {
	secret := []byte("shared-secret")
	body := []byte(`{"type":"DayHasPassed","id":"day/2026-03-29T00:00:00Z"}`)
	header := sink.Sign(secret, body) // what the ticker sends

	fmt.Println(sink.Verify(secret, body, header))
	fmt.Println(sink.Verify(secret, []byte(`{"type":"forged"}`), header))
	// Output:
	// true
	// false
}
