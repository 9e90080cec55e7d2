// Package names checks the names users give what passage stores — a
// schedule, a to-do list, a workflow instance — where they are created, so
// that every name stored can be typed, stored on both databases and carried
// in a URL path.
package names
