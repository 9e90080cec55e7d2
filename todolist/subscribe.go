package todolist

// subscriber is replaced once the bus lands.
type subscriber func()

func subscriberFor[E any](p *Projection) subscriber { return nil }
