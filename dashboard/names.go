package dashboard

import (
	"net/url"
	"strings"
)

// A list, a schedule or a workflow instance may be named "." or ".."
// (the libraries took such names before they refused them). A browser
// removes those segments from a path before it asks, "%2e" included, and
// net/http's ServeMux redirects to the path without them: the link
// /schedules/./trigger of schedule "." asked for /schedules/trigger, the
// page of the schedule named "trigger". So every route with a name in its
// path has a twin taking the name as a query parameter, which nothing
// rewrites — /lists/{name} is also /list?name=, /schedules/{name}/trigger
// /schedule/trigger?name=, /workflows/{id} /workflow?id= — and the links
// of those two names go through it (itemPath).

// twins are the path prefixes whose wildcard has a twin route: the
// prefix with the name in the path, the query parameter that carries the
// name in its twin, and the twin's prefix.
var twins = []struct{ inPath, key, inQuery string }{
	{"/lists/{name}", "name", "/list"},
	{"/schedules/{name}", "name", "/schedule"},
	{"/workflows/{id}", "id", "/workflow"},
}

// rewritten reports whether a browser rewrites name as a path segment.
func rewritten(name string) bool { return name == "." || name == ".." }

// itemPath is the path, below the base path, of the item name of kind
// ("lists", "schedules", "workflows") followed by suffix ("", "/trigger"…)
// and the query of the key-value pairs kv: /schedules/<name>/trigger, or
// for "." and ".." the twin route /schedule/trigger?name=. (see twins).
func itemPath(kind, name, suffix string, kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Add(kv[i], kv[i+1])
	}
	p := "/" + kind + "/" + url.PathEscape(name) + suffix
	if rewritten(name) {
		for _, tw := range twins {
			if strings.HasPrefix(tw.inPath, "/"+kind+"/") {
				p = tw.inQuery + suffix
				q.Set(tw.key, name)
			}
		}
	}
	if len(q) == 0 {
		return p
	}
	return p + "?" + q.Encode()
}

// withQuery is path with the query of v added to its own.
func withQuery(path string, v url.Values) string {
	if len(v) == 0 {
		return path
	}
	if strings.Contains(path, "?") {
		return path + "&" + v.Encode()
	}
	return path + "?" + v.Encode()
}
