package workflow

// SetAfterEffect makes w call f once an operation ("reserve", "release",
// "ship") took effect and before it answers; f's error is returned instead
// of the answer, as a lost reply would be. f runs with w locked and must
// not call w. Tests use it to simulate a timeout after the effect, or a
// crash.
func SetAfterEffect(w *Warehouse, f func(op, orderID string) error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.afterEffect = f
}
