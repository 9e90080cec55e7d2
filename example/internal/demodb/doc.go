// Package demodb opens the database an example runs on: the one its -db
// flag names, or a temporary SQLite file removed when the example ends,
// so that running an example leaves nothing behind unless asked to.
package demodb
