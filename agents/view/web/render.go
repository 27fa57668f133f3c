package web

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/tavernhq/tavern/agents/view"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

//go:embed templates static
var assets embed.FS

// md renders markdown bodies. goldmark's default renderer drops raw HTML
// ("<!-- raw HTML omitted -->") and unsafe link schemes (javascript:):
// documents are written by agents and must not script the page.
// Made on first use, like the templates: a package-level value would
// be built at the start of every tavern command, not only serve's.
var md = sync.OnceValue(func() goldmark.Markdown { return goldmark.New(goldmark.WithExtensions(extension.GFM)) })

// templates are parsed on first use, not when the program starts: every
// `tavern` process (the agent tools' hooks among them) would pay for it.
var templates = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{
		"md":        renderMD,
		"age":       func(now, t any) string { return view.Age(timeOf(now), timeOf(t)) },
		"ts":        func(t any) string { return stamp(timeOf(t)) },
		"event":     eventData,
		"lower":     strings.ToLower,
		"path":      url.PathEscape,
		"query":     url.QueryEscape,
		"join":      strings.Join,
		"owners":    owners,
		"percent":   func(f float64) string { return fmt.Sprintf("%.0f%%", f*100) },
		"rate":      func(f float64) string { return fmt.Sprintf("%.1f", f) },
		"hasPrefix": strings.HasPrefix,
		"sub":       func(a, b int) int { return a - b },
		"dict":      dict,
		"action": func(name, target, label string) view.Action {
			return view.Action{Name: name, Target: target, Label: label, Input: "message"}
		},
		// html/template drops comments written in a template.
		"exportMark": func(s *view.Snapshot) template.HTML {
			return template.HTML("<!-- tavern export of " + template.HTMLEscapeString(s.Root) + " at " + stamp(s.Time.Time) + " -->\n")
		},
		"css": func() template.CSS {
			b, _ := assets.ReadFile("static/style.css")
			return template.CSS(b)
		},
	}).ParseFS(assets, "templates/*.html"))
})

// dict builds the argument of a sub-template that needs the page and one
// value: {{template "action" (dict "P" $ "A" .)}}.
func dict(kv ...any) map[string]any {
	m := make(map[string]any, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func render(w io.Writer, name string, p *Page) error {
	return templates().ExecuteTemplate(w, name, p)
}

func renderMD(s string) template.HTML {
	var b bytes.Buffer
	if err := md().Convert([]byte(s), &b); err != nil {
		return template.HTML(template.HTMLEscapeString(s))
	}
	return template.HTML(b.String())
}

// timeOf is the time of a template value: the snapshot's times are
// schema.Timestamps (for their JSON), others time.Time.
func timeOf(v any) time.Time {
	switch t := v.(type) {
	case schema.Timestamp:
		return t.Time
	case time.Time:
		return t
	}
	return time.Time{}
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// eventData is an event's details as "key=value" pairs, sorted.
func eventData(e journal.Event) string {
	var parts []string
	for _, kv := range [][2]string{{"queue", e.Queue}, {"item", e.Item}, {"parent", e.Parent}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	keys := make([]string, 0, len(e.Data))
	for k := range e.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := fmt.Sprint(e.Data[k])
		if len(v) > 120 {
			// Cut on a character boundary: a byte cut split a
			// multi-byte character and the page showed a broken one.
			cut := 119
			for cut > 0 && !utf8.RuneStart(v[cut]) {
				cut--
			}
			v = v[:cut] + "…"
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, "  ")
}

func owners(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k, n := range m {
		keys = append(keys, fmt.Sprintf("%s (%d)", k, n))
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

// Link is the href of a page: the server's path, or in an export the
// file that holds it (every exported page is in one directory).
func (p *Page) Link(path string) string {
	if !p.Static {
		return path
	}
	switch {
	case path == "/":
		return "index.html"
	case strings.HasPrefix(path, "/agents/"):
		return "agent-" + strings.TrimPrefix(path, "/agents/") + ".html"
	case strings.HasPrefix(path, "/items/"):
		return "item-" + strings.TrimPrefix(path, "/items/") + ".html"
	case strings.HasPrefix(path, "/channels/"):
		return "channel-" + strings.TrimPrefix(path, "/channels/") + ".html"
	case strings.HasPrefix(path, "/docs/"):
		return "" // documents are not exported one by one
	}
	return strings.TrimPrefix(path, "/") + ".html"
}

// Nav is the navigation bar: name, title, link, and a count to show.
func (p *Page) Nav() []NavEntry {
	s := p.Snap
	return []NavEntry{
		{"needs", "Needs you", p.Link("/"), len(s.Needs)},
		{"agents", "Agents", p.Link("/agents"), len(s.Agents)},
		{"queues", "Queues", p.Link("/queues"), len(s.Queues)},
		{"channels", "Channels", p.Link("/channels"), len(s.Channels)},
		{"resources", "Resources", p.Link("/resources"), len(s.Reservations) + len(s.Tokens) + len(s.Pools)},
		{"journal", "Journal", p.Link("/journal"), 0},
	}
}

// NavEntry is one entry of Page.Nav.
type NavEntry struct {
	Name, Title, Href string
	Count             int
}

// Active reports whether the nav entry is the page's section.
func (p *Page) Active(n string) bool {
	switch p.Name {
	case "agent":
		return n == "agents"
	case "item":
		return n == "queues"
	case "channel":
		return n == "channels"
	case "doc", "confirm":
		return n == "needs"
	}
	return p.Name == n
}
