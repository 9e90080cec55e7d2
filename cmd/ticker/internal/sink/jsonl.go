package sink

import (
	"context"
	"fmt"
	"io"
	"sync"
)

// JSONLines writes each event as one JSON object per line.
type JSONLines struct {
	mu sync.Mutex
	w  io.Writer
}

// NewJSONLines returns a sink writing to w.
func NewJSONLines(w io.Writer) *JSONLines { return &JSONLines{w: w} }

// Publish writes the events in order; it stops at the first that cannot be
// written, so the ticker offers it again.
func (j *JSONLines) Publish(ctx context.Context, events ...any) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, event := range events {
		if err := ctx.Err(); err != nil {
			return err
		}
		body, _, err := Marshal(event)
		if err != nil {
			return err
		}
		if _, err := j.w.Write(append(body, '\n')); err != nil {
			return fmt.Errorf("sink: write json line: %w", err)
		}
	}
	return nil
}
