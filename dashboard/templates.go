package dashboard

import (
	"fmt"
	"html/template"

	"github.com/passage-of-time/passage/tick"
)

// pageNames are the pages, each a template of its own over layout.html.
var pageNames = []string{"tickers", "lists", "list", "schedules", "workflows", "workflow", "confirm", "error"}

var funcs = template.FuncMap{
	"time": func(t any) string {
		switch t := t.(type) {
		case Time:
			return tick.FormatTime(t.Time)
		case *Time:
			if t == nil {
				return "-"
			}
			return tick.FormatTime(t.Time)
		}
		return fmt.Sprint(t)
	},
	"path":  pathEscape,
	"thous": thousands,
}

func parsePages() (map[string]*template.Template, error) {
	pages := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/"+name+".html")
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
