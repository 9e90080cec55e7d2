package eventstore

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// Registry maps event type names, as stored, to Go types and back. Events
// are stored as JSON, so a type may gain fields (old events decode with
// the zero value) or lose them (stored values are ignored) and stay readable
// under the same name.
//
// A Registry is safe for concurrent use; types may be registered while
// stores that use it are running.
type Registry struct {
	mu     sync.RWMutex
	byName map[string]reflect.Type
	byType map[reflect.Type]string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byName: map[string]reflect.Type{}, byType: map[reflect.Type]string{}}
}

// Register records that events of Go type E are stored under name. The name
// is what goes into the database, so keep it stable when the Go type is
// renamed or moved. Each name and each type can be registered once; E must
// be a concrete, non-pointer type (appending a *E is accepted and stores the
// E it points to). Errors match [ErrInvalidRegistration].
func Register[E any](r *Registry, name string) error {
	t := reflect.TypeFor[E]()
	switch {
	case r == nil:
		return fmt.Errorf("%w: registry is nil", ErrInvalidRegistration)
	case name == "" || strings.TrimSpace(name) != name:
		return fmt.Errorf("%w: name %q for %v must be non-empty without surrounding spaces", ErrInvalidRegistration, name, t)
	case t.Kind() == reflect.Interface || t.Kind() == reflect.Pointer:
		return fmt.Errorf("%w: %v for %q: register the concrete non-pointer type", ErrInvalidRegistration, t, name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if other, ok := r.byName[name]; ok {
		return fmt.Errorf("%w: name %q is already registered for %v", ErrInvalidRegistration, name, other)
	}
	if other, ok := r.byType[t]; ok {
		return fmt.Errorf("%w: %v is already registered as %q", ErrInvalidRegistration, t, other)
	}
	r.byName[name] = t
	r.byType[t] = name
	return nil
}

// encode returns the registered name and JSON of event, and the value to
// record and publish: a *E is dereferenced to its E so appended and loaded
// events have the same type.
func (r *Registry) encode(event any) (name string, data []byte, value any, err error) {
	v := reflect.ValueOf(event)
	if !v.IsValid() || (v.Kind() == reflect.Pointer && v.IsNil()) {
		return "", nil, nil, fmt.Errorf("%w: event is nil", ErrInvalidArgument)
	}
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	r.mu.RLock()
	name, ok := r.byType[v.Type()]
	r.mu.RUnlock()
	if !ok {
		return "", nil, nil, fmt.Errorf("%w: %v (register it with eventstore.Register)", ErrUnregisteredType, v.Type())
	}
	value = v.Interface()
	data, err = json.Marshal(value)
	if err != nil {
		return "", nil, nil, fmt.Errorf("eventstore: encode %q as JSON: %w", name, err)
	}
	return name, data, value, nil
}

// decode turns a stored name and JSON back into a value of the registered
// type (not a pointer).
func (r *Registry) decode(name string, data []byte) (any, error) {
	r.mu.RLock()
	t, ok := r.byName[name]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownEventType, name)
	}
	p := reflect.New(t)
	if err := json.Unmarshal(data, p.Interface()); err != nil {
		return nil, fmt.Errorf("eventstore: decode %q into %v: %w", name, t, err)
	}
	return p.Elem().Interface(), nil
}

// Encode returns the name event's type is registered under and its JSON,
// as the store writes them: for exporting events (a workflow's history
// kept as test data), not for appending.
func (r *Registry) Encode(event any) (name string, data []byte, err error) {
	name, data, _, err = r.encode(event)
	return name, data, err
}

// Decode turns a registered name and JSON back into a value of the
// registered type, as the store reads them: for importing exported events.
func (r *Registry) Decode(name string, data []byte) (any, error) {
	return r.decode(name, data)
}
