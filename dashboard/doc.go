// Package dashboard is the operators' web page over a passage database:
// tickers, to-do lists, schedules and workflows, with a JSON API under the
// pages. It is an http.Handler, so a program mounts it in its own server;
// "ticker run --http" serves it beside /healthz and /metrics, and
// "ticker serve" serves it alone.
//
// The paths below are from the root. To mount it under a path of its
// own, give that path to WithBasePath and mount it there:
//
//	d, err := dashboard.New(db, dashboard.WithBasePath("/ops"))
//	mux.Handle("/ops/", d)
//
// It then answers below /ops/ alone, and writes every link, form,
// redirect and its session cookie's path with the prefix. (Wrapping it in
// http.StripPrefix without the option serves the pages, but their links
// point at the root.)
//
// # Pages
//
//	/                   tickers: each unit's cursor, next boundary, how far behind, lag;
//	                    the leader's holder and term; ticks emitted and skipped (when a
//	                    ticker runs in this process, see WithTickerCounts); the outbox:
//	                    the records it holds and when the oldest was recorded, in one
//	                    statement (outbox.ReadSize); lag over time
//	/lists              to-do lists: pending, due now, oldest overdue, lag, failing, parked,
//	                    totals; 50 a page (?page=n), filtered and sorted on the server
//	                    (?q= a part of the name, ?only=behind|failing|parked,
//	                    ?sort=name|oldest|pending|failing|parked) in one statement
//	                    (todolist.ReadListPage)
//	/lists/{name}       one list: its counts, a chart of items due in the next 24 hours,
//	                    its items 50 a page (?after=cursor), ?parked=1 for parked items
//	                    with their last error, and re-activate; a chart of its due items
//	                    by how long they have been due (the items' due times: items done
//	                    are deleted, so past lateness is the metrics' business)
//	/schedules          50 schedules a page (?page=n), filtered and sorted on the server
//	                    (?q= a part of the name, ?only=overdue|failing|paused,
//	                    ?sort=name|next|attempts|runs), in one statement however many
//	                    there are: each one's next slot in its own zone, the failed
//	                    attempts at that slot with the last error, its last runs with
//	                    run ids and outcomes; pause, resume, trigger
//	/schedules/{name}   one schedule: the same, its last 100 runs and a chart of how late
//	                    each fired (fired_at − slot, manual runs left out)
//	/workflows          instances by state (?state=running…) and the start of their ID
//	                    (?q=), sorted by ?sort=id|state|started|updated, 50 a page
//	                    (?after=id by ID, ?page=n in any order), one statement a page
//	                    (orchestration.ReadPage)
//	/workflows/{id}     one instance's history as a timeline; signal and cancel
//
// A browser removes "." and ".." segments from a path before it asks,
// encoded as %2e or not, so a list, schedule or instance of those names
// cannot be reached through its path (/schedules/./trigger asked for
// /schedules/trigger, the schedule named "trigger"). Every route with a
// name in its path, the API's and the actions' too, has a twin taking the
// name in the query, which no browser rewrites: /list?name=.,
// /schedule/trigger?name=.., /workflow?id=., /api/list/items?name=. and
// so on. The pages link those two names that way.
//
// # The summary
//
// Every page but the error and confirmation pages starts with a summary
// of what is wrong, each kind of trouble a count linking to its rows,
// which their page highlights in the same colour: amber to look at soon,
// red to look at now. The thresholds (trouble.go; docs/alerting.md turns
// them into alerts):
//
//	ticker behind       a unit's next boundary past by over 1 min; red over 10 min
//	ticker failing      publish failures counted by this process's ticker (red)
//	lease expired       a holder whose lease ended: amber for 1 min, then red
//	schedules overdue   next slot plus jitter past by over 1 min; red over 15 min
//	to-do lists behind  the oldest due item waiting over 1 min; red over 15 min
//	items parked        red; items failing (attempts, not parked) amber
//	workflows stuck     red; workflows failed amber
//
// When nothing is wrong it says so. It reads the status, the overdue
// schedules (schedule.ReadOverdue), the failing items
// (todolist.ReadFailing) and the instances' states: at 100,000 schedules
// more than the page under it, so one reading serves the pages of the
// following second.
//
// Every name a page shows (a list's, an item's, a schedule's, an
// instance's, a workflow's, a holder's) and every error text is isolated
// in a <bdi>, so that a right-to-left override in it (U+202E) does not
// reverse the text after it; where a text is made of parts (the title, a
// done message, a timeline line) its bidirectional controls show as
// escapes, \u202e.
//
// Times print relative to the page's now ("5 min ago", "in 3 h") in a
// <time> whose title and datetime hold the exact instant, RFC 3339 to the
// second, in the dashboard's zone (WithLocation) or, for a schedule's
// slots, the schedule's own. The JSON API keeps its lossless instants.
//
// Pages are html/template, server-rendered, charts inline SVG; the CSS and
// the few lines of script that reload a page every refresh period are
// embedded. A page does not reload while one of its fields has the focus
// or holds something else than it was loaded with (something is being
// typed); a filtered page, its search box filled from the URL, reloads
// like the others. Nothing needs a build step.
//
// Item pages are keyset-paged: the cursor is the last item's (instant, id),
// and each page walks the list's index from there, so the millionth page
// costs what the first does. Pending items are ordered by when they may
// next be claimed (their due time unless they failed and back off), parked
// items by due time: the orders of the indexes the to-do list already has.
// A list's counts are one statement each over that list's rows.
//
// The lag chart is sampled by the running process (Dashboard.Start, every
// 30 s by default, two hours kept) and held in memory: it starts empty at
// every start and each replica has its own.
//
// # JSON API
//
//	GET /api/status                       exactly what "ticker status --json" prints (ReadStatus)
//	GET /api/lag                          the lag samples held in memory
//	GET /api/lists                        {lists, total, page, pages, q, only, sort, prev, next}:
//	                                      the lists page's page of lists, from the same
//	                                      parameters (?q=, ?only=, ?sort=, ?page=), each with
//	                                      its counts, failing and trouble ("", amber, red)
//	GET /api/lists/{name}                 {stats, due_next_24h, from}
//	GET /api/lists/{name}/items           {items, next}; ?after=<next>, ?parked=1, ?limit=1..1000
//	GET /api/schedules                    {schedules, total, page, pages, prev, next}: the page's
//	                                      schedules with next_slot in their zone, failed_attempts,
//	                                      last_error and last_runs; the page's query parameters
//	GET /api/schedules/{name}/runs        runs, newest first; ?limit=1..1000
//	GET /api/workflows                    {counts, state, q, instances, next}; ?state=, ?q=, ?after=
//	GET /api/workflows/{id}               {instance, history}
//
// Errors are {"error": "..."}: 400 for bad input (a cursor that does not
// parse, a limit out of range, an unknown state; see Input), 404 for a
// list, schedule or instance that does not exist. A page's error keeps the
// page's navigation and says what is wrong. Any other path is 404.
//
// A server error shows none of the database's words, which may hold SQL
// or a connection string's user, database and host: the page, the API
// ({"error": ..., "reference": ...}) and a plain answer say that it
// failed and give a short reference, and the log has the error under
// that reference (the summary's errors too). Each request's database work
// has a deadline (WithRequestTimeout, 10 s by default): a request still
// waiting for a pooled connection then, or one the database refuses or
// drops (PostgreSQL's "too many clients already", a connection refused,
// SQLite's "database is locked"), is answered 503 with Retry-After: 5. An
// error page never reloads itself: reload it to try again.
//
// # Input
//
// Every query parameter, name in a path and form field is checked before
// a handler or the database sees it (input.go). One that cannot be valid
// is answered 400, the message naming it and saying what it should be
// (the page's shell for a browser, {"error": ...} under /api/ and to a
// bearer token). No input may hold a NUL byte or invalid UTF-8 (a
// PostgreSQL TEXT can hold neither), nor be longer than its cap, in
// bytes:
//
//	?q=                      256, no control characters
//	?sort= ?only= ?state=    32, no control characters (then one of the
//	?parked= and an action   page's words, else 400)
//	?page= ?limit=           20, no control characters (then a number in range)
//	a list's name            200 (todolist.MaxNameLength), no control characters
//	a schedule's name        200, as schedule.Definition takes it
//	a workflow instance id   200, as orchestration.Start takes it (also ?after=
//	                         on /workflows)
//	a list's ?after=         1,358: a cursor that parses, whose item id is one
//	                         an item can have (todolist.MaxIDLength)
//	an item id (form id)     1,000 (todolist.MaxIDLength)
//	back= (log in and out)   2,048
//	token (log in)           1,024
//	a signal's name          200, no control characters; its payload: JSON
//	                         within the body's 1 MiB, no \u0000 in it
//	?done= ?sig=             4,096 and 64 (the message an action leaves)
//
// Parameters a page does not read are ignored. ?q= is matched literally:
// "%" and "_" are not wildcards.
//
// back= (where logging in and out return) is followed only when it is a
// path of the dashboard: starting with a single "/", holding no "\", no
// control character, no scheme or host and no "." or ".." segment;
// anything else returns to the start page.
//
// # Actions
//
// Re-activating a parked item, pausing, resuming and triggering a
// schedule, signalling and cancelling a workflow change things, so they
// need an admin token (WithAdminToken; "--admin-token" or
// PASSAGE_ADMIN_TOKEN on the command line). Without one the dashboard is
// read-only: no action is shown and every action is refused with 403.
// With one, a browser logs in with the token (a form), which starts a
// session: a random id kept in memory, expiring after WithSessionTTL
// (12 hours by default) and ended at logout; its cookie is HttpOnly,
// SameSite=Strict and Secure over TLS or with WithSecureCookie. A program
// sends "Authorization: Bearer <token>":
//
//	POST /lists/{name}/reactivate         form id=<item id>
//	POST /schedules/{name}/pause|resume|trigger
//	POST /workflows/{id}/signal           form name=<signal>, payload=<JSON>
//	POST /workflows/{id}/cancel
//
// Triggering a schedule and cancelling an instance cannot be undone, so
// their buttons ask first: they open GET /schedules/{name}/trigger or
// GET /workflows/{id}/cancel, a page whose own button posts (the pages
// allow no inline script, so this works without one). A program posts
// directly.
//
// A signal refused (no name, a payload that is not JSON) comes back to a
// browser as the instance's page, its form holding what was typed and
// the error beside it.
//
// Every POST goes through net/http's CrossOriginProtection, which refuses
// requests a browser marks cross-site (Sec-Fetch-Site) or whose Origin is
// another host, token or not. An action's or a login's body is read
// before anything else, within 10 s and up to 1 MiB: a body over the
// limit is answered 413, one not sent in time 408. Every action done is
// logged with slog.
//
// # Security
//
// Reading needs no token: whoever reaches the server reads every page
// and the API, workflow inputs, signal payloads and errors among them.
// Serve it on a loopback address, or behind a proxy that authenticates.
// What the dashboard checks itself:
//
//   - The Host header must name it: an IP address, "localhost" or a name
//     below it, or a name given to WithAllowedHosts. Other names are
//     answered 421 before anything is read, so that another site cannot
//     read the pages through a name it resolves to this server (DNS
//     rebinding). Behind a proxy, allow the Host the proxy forwards.
//   - A client address (an IPv6 client's /64) gets 10 wrong attempts at
//     the token, logins and bearer tokens together, then one every 6
//     seconds; the others are answered 429 unchecked. Behind a proxy
//     every client has the proxy's address, so limit there too.
//   - Refusals are logged at most once a minute per client, each line
//     with the number of refusals since the previous one.
//
// Reading never migrates or locks: the dashboard reads through the
// packages' inspection functions (tick.ReadCursors, todolist.ReadItems,
// schedule.ReadRuns, orchestration.ReadInstances…), so a read-only
// database will do unless actions are allowed.
package dashboard
