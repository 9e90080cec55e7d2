package sink

import (
	"context"
	"fmt"
	"io"
	"sync"
)

// JSONLines writes each record's CloudEvent ([Event], the structured
// content mode) as one line: the bodies are JSON objects on one line
// (see [Marshal]).
type JSONLines struct {
	mu sync.Mutex
	w  io.Writer
}

// NewJSONLines returns a sink writing to w.
func NewJSONLines(w io.Writer) *JSONLines { return &JSONLines{w: w} }

// Send writes body and a newline; key and typ are in the body already.
// A body an older ticker stored before the envelope is written as its
// envelope. It is safe for concurrent use: lines never interleave.
func (j *JSONLines) Send(ctx context.Context, _, typ string, body []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	body, err := envelopeOf(typ, body)
	if err != nil {
		return fmt.Errorf("sink: write json line: %w", err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := j.w.Write(append(body[:len(body):len(body)], '\n')); err != nil {
		return fmt.Errorf("sink: write json line: %w", err)
	}
	return nil
}
