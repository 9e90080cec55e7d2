package dashboard

import (
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"strings"
	"unicode"
)

// files are what the pages are made of: their templates, parsed by New
// (parsePages), and the assets they load, served under /assets/.
//
//go:embed assets templates
var files embed.FS

// assets is the directory of the files the pages load.
func assets() fs.FS {
	sub, err := fs.Sub(files, "assets")
	if err != nil {
		panic(err) // the directory is embedded above
	}
	return sub
}

// pageNames are the pages, each a template of its own over layout.html.
var pageNames = []string{"tickers", "lists", "list", "schedules", "schedule", "workflows", "workflow", "confirm", "error"}

// funcs are the functions the templates call.
var funcs = template.FuncMap{
	"when":    when,
	"item":    itemPath,
	"dots":    rewritten,
	"thous":   thousands,
	"visible": visibleBidi,
	"section": func(s scheduleView, v view) sectionData { return sectionData{S: s, V: v} },
}

// sectionData is a schedule's section as the schedules page and the
// schedule's own page show it: the schedule and the page's view.
type sectionData struct {
	S scheduleView
	V view
}

// visibleBidi writes the bidirectional controls of s (U+202E, the
// right-to-left override, among them) as escapes, \u202e: for text made of
// several parts, where a <bdi> around the whole would not keep a name's
// override from reversing the words after it, and for the <title>, which
// holds no element. A name alone is put in a <bdi> instead.
func visibleBidi(s string) string {
	if !strings.ContainsFunc(s, isBidiControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isBidiControl(r) {
			fmt.Fprintf(&b, "\\u%04x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isBidiControl(r rune) bool { return unicode.Is(unicode.Bidi_Control, r) }

// parsePages parses each page's template over the layout and the
// schedule's section, which several pages show.
func parsePages() (map[string]*template.Template, error) {
	pages := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/section.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("dashboard: parse the %s page: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// thousands writes n with thin separators every three digits, so a
// million reads as one.
func thousands(n any) string {
	s := fmt.Sprint(n)
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
