// Package browsertest finds and configures the headless Chromium the
// browser tests drive (the dashboard's and "ticker serve"'s), so they
// start it the same way.
package browsertest
