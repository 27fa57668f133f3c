package web

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tavernhq/tavern/agents/view"
	"github.com/tavernhq/tavern/docstore"
)

// ExportHTML writes the pages of v as static HTML files into dir (created
// if needed): index.html (Needs you), agents.html and agent-NAME.html,
// queues.html and item-ID.html for every item on the board, channels.html
// and channel-NAME.html, resources.html and journal.html. The pages are the
// served ones without forms or script, with the style sheet inlined, so
// the directory can be zipped, mailed or published as is. An earlier
// export's pages of agents, items and channels gone since are removed. It
// returns the files written.
func ExportHTML(v *view.View, dir string) ([]string, error) {
	if err := CheckExportDir(v, dir); err != nil {
		return nil, err
	}
	snap, err := v.Snapshot()
	if err != nil {
		return nil, err
	}
	type page struct {
		name string
		p    *Page
	}
	var pages []page
	for _, name := range []string{"needs", "agents", "queues", "channels", "resources"} {
		file := name + ".html"
		if name == "needs" {
			file = "index.html"
		}
		pages = append(pages, page{file, listPage(name, snap)})
	}
	pages = append(pages, page{"journal.html", journalPage(snap, JournalFilter{})})
	for _, a := range snap.Agents {
		p, err := agentPage(v, snap, a.Name)
		if err != nil {
			return nil, err
		}
		pages = append(pages, page{"agent-" + a.Name + ".html", p})
	}
	for _, q := range snap.Queues {
		for _, c := range q.Columns {
			for _, it := range c.Items {
				p, err := itemPage(v, snap, it.ID)
				if err != nil {
					continue // moved or gone since the snapshot
				}
				pages = append(pages, page{"item-" + it.ID + ".html", p})
			}
		}
	}
	for _, c := range snap.Channels {
		p, err := channelPage(v, snap, c.Name)
		if err != nil {
			return nil, err
		}
		pages = append(pages, page{"channel-" + c.Name + ".html", p})
	}
	names := make([]string, len(pages))
	for i, pg := range pages {
		names[i] = pg.name
	}
	if err := notOverExport(dir, names); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, pg := range pages {
		pg.p.Static = true
		var buf bytes.Buffer
		if err := render(&buf, "layout", pg.p); err != nil {
			return files, fmt.Errorf("export %s: %w", pg.name, err)
		}
		path := filepath.Join(dir, pg.name)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			return files, err
		}
		files = append(files, path)
	}
	return files, removeStale(dir, names)
}

// pagePrefixes are the per-document pages of an HTML export: an agent,
// item or channel gone since an earlier export leaves its page behind.
var pagePrefixes = []string{"agent-", "item-", "channel-"}

// removeStale removes the pages of an earlier export in dir that this one
// did not write (their agent, item or channel is gone), so the directory
// is the board as it is now. Only files that are exports go (isExport):
// a person's own agent-x.html stays.
func removeStale(dir string, written []string) error {
	keep := make(map[string]bool, len(written))
	for _, n := range written {
		keep[n] = true
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		name := e.Name()
		if keep[name] || !e.Type().IsRegular() || !strings.HasSuffix(name, ".html") ||
			!slices.ContainsFunc(pagePrefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		path := filepath.Join(dir, name)
		if mine, err := isExport(path); err != nil || !mine {
			continue
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// exportMarks are in the first bytes of every exported file (" · tavern</title>"
// in HTML exports made before the comment): a file without one is someone's
// own, never overwritten.
var exportMarks = [][]byte{[]byte("<!-- tavern export of "), []byte(" · tavern</title>")}

// notOverExport refuses an export into dir when one of the files it
// would write exists and is not an earlier export, before anything is
// written.
func notOverExport(dir string, names []string) error {
	for _, name := range names {
		path := filepath.Join(dir, name)
		mine, err := isExport(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if !mine {
			return &fs.PathError{Op: "export", Path: path, Err: ErrNotExport}
		}
	}
	return nil
}

// isExport reports whether the file at path is an earlier export: an
// export mark in its first bytes.
func isExport(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	for _, m := range exportMarks {
		if bytes.Contains(head[:n], m) {
			return true, nil
		}
	}
	return false, nil
}

// mdSections are the Markdown export's files, in the order WriteMarkdown
// concatenates them.
var mdSections = []struct {
	file  string
	write func(io.Writer, *view.Snapshot)
}{
	{"README.md", mdNeeds},
	{"agents.md", mdAgents},
	{"queues.md", mdQueues},
	{"channels.md", mdChannels},
	{"resources.md", mdResources},
	{"journal.md", mdJournal},
}

// ExportMarkdown writes the same pages as Markdown files into dir:
// README.md (Needs you), agents.md, queues.md, channels.md, resources.md,
// journal.md. It returns the files written.
func ExportMarkdown(v *view.View, dir string) ([]string, error) {
	if err := CheckExportDir(v, dir); err != nil {
		return nil, err
	}
	snap, err := v.Snapshot()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	names := make([]string, len(mdSections))
	for i, s := range mdSections {
		names[i] = s.file
	}
	if err := notOverExport(dir, names); err != nil {
		return nil, err
	}
	var files []string
	for _, s := range mdSections {
		var buf bytes.Buffer
		mdHeader(&buf, snap)
		s.write(&buf, snap)
		path := filepath.Join(dir, s.file)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			return files, err
		}
		files = append(files, path)
	}
	return files, nil
}

// WriteMarkdown writes every page of snap as one Markdown document.
func WriteMarkdown(w io.Writer, snap *view.Snapshot) error {
	var buf bytes.Buffer
	mdHeader(&buf, snap)
	for _, s := range mdSections {
		s.write(&buf, snap)
		buf.WriteString("\n")
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func mdHeader(w io.Writer, s *view.Snapshot) {
	fmt.Fprintf(w, "<!-- tavern export of %s at %s, version %d -->\n\n", s.Root, stamp(s.Time.Time), s.Version)
}

// cell makes a value safe in a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.TrimSpace(s)
}

func table(w io.Writer, head []string, rows [][]string) {
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat(" --- |", len(head)))
	for _, r := range rows {
		for i := range r {
			r[i] = cell(r[i])
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
	fmt.Fprintln(w)
}

func mdNeeds(w io.Writer, s *view.Snapshot) {
	fmt.Fprintf(w, "# Needs you (%d)\n\n", len(s.Needs))
	if len(s.Needs) == 0 {
		fmt.Fprintln(w, "Nothing waits on you.")
		fmt.Fprintln(w)
	}
	for _, n := range s.Needs {
		fmt.Fprintf(w, "## [%s] %s\n\n", n.Kind, n.What)
		fmt.Fprintf(w, "- why: %s\n- do: %s\n", n.Why, n.Do)
		if n.Path != "" {
			fmt.Fprintf(w, "- document: `%s`\n", n.Path)
		}
		if !n.Since.IsZero() {
			fmt.Fprintf(w, "- since: %s (%s ago)\n", stamp(n.Since.Time), view.Age(s.Time.Time, n.Since.Time))
		}
		if n.Text != "" {
			fmt.Fprintf(w, "\n%s\n", quote(n.Text))
		}
		fmt.Fprintln(w)
	}
}

func quote(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = "> " + l
	}
	return strings.Join(lines, "\n")
}

func mdAgents(w io.Writer, s *view.Snapshot) {
	fmt.Fprintf(w, "# Agents (%d)\n\n", len(s.Agents))
	var rows [][]string
	for _, a := range s.Agents {
		alive := ""
		if a.Alive {
			alive = "running"
		}
		last := ""
		if !a.LastActivity.IsZero() {
			last = view.Age(s.Time.Time, a.LastActivity.Time) + " ago"
		}
		rows = append(rows, []string{a.Name, a.State, alive, a.Role, a.Parent, strings.Join(a.Claims, " "), last, a.Commitments})
	}
	table(w, []string{"agent", "state", "process", "role", "parent", "claims", "last activity", "commitments"}, rows)
	if len(s.Commitments) > 0 {
		fmt.Fprintf(w, "## Commitments\n\n")
		rows = nil
		for _, c := range s.Commitments {
			st := c.Status
			if c.TimedOut {
				st += " (timed out)"
			}
			rows = append(rows, []string{c.Agent, st, c.Description, "`" + c.Assertion + "`"})
		}
		table(w, []string{"agent", "status", "description", "assertion"}, rows)
	}
	if len(s.Questions) > 0 {
		fmt.Fprintf(w, "## Questions\n\n")
		rows = nil
		for _, q := range s.Questions {
			rows = append(rows, []string{q.ID, q.Status, q.From, q.To, q.Answer})
		}
		table(w, []string{"id", "status", "from", "to", "answer"}, rows)
	}
}

func mdQueues(w io.Writer, s *view.Snapshot) {
	fmt.Fprintf(w, "# Queues (%d)\n\n", len(s.Queues))
	var rows [][]string
	for _, q := range s.Queues {
		oldest := ""
		if !q.OldestPending.IsZero() {
			oldest = view.Age(s.Time.Time, q.OldestPending.Time)
		}
		rows = append(rows, []string{q.Name, fmt.Sprint(q.Priority), fmt.Sprint(q.Pending), fmt.Sprint(q.Claimed),
			fmt.Sprint(q.Done), fmt.Sprint(q.Dead), fmt.Sprintf("%.1f/min", q.Throughput), oldest, owners(q.Owners)})
	}
	table(w, []string{"queue", "priority", "pending", "claimed", "done", "dead", "throughput", "oldest pending", "owners"}, rows)
	for _, q := range s.Queues {
		fmt.Fprintf(w, "## %s\n\n", q.Name)
		for _, c := range q.Columns {
			fmt.Fprintf(w, "### %s (%d)\n\n", c.State, c.Total)
			for _, it := range c.Items {
				title := it.Title
				if title == "" {
					title = it.ID
				}
				extra := ""
				if it.ClaimedBy != "" {
					extra += " — " + it.ClaimedBy
				}
				if it.LastError != "" {
					extra += " — " + it.LastError
				}
				if it.DeadReason != "" {
					extra += " — " + it.DeadReason
				}
				fmt.Fprintf(w, "- %s `%s`%s\n", cell(title), it.ID, cell(extra))
			}
			if more := c.Total - len(c.Items); more > 0 {
				fmt.Fprintf(w, "- … %d more\n", more)
			}
			fmt.Fprintln(w)
		}
	}
}

func mdChannels(w io.Writer, s *view.Snapshot) {
	fmt.Fprintf(w, "# Channels (%d)\n\n", len(s.Channels))
	var rows [][]string
	for _, c := range s.Channels {
		last := ""
		if !c.Last.IsZero() {
			last = stamp(c.Last.Time)
		}
		rows = append(rows, []string{c.Name, c.Topic, fmt.Sprint(c.Messages), last})
	}
	table(w, []string{"channel", "topic", "messages", "last"}, rows)
}

func mdResources(w io.Writer, s *view.Snapshot) {
	fmt.Fprintf(w, "# Reservations, tokens and pools\n\n## Reservations (%d)\n\n", len(s.Reservations))
	var rows [][]string
	for _, r := range s.Reservations {
		exp := "until released"
		if !r.Expires.IsZero() {
			exp = stamp(r.Expires.Time)
		}
		rows = append(rows, []string{r.Agent, "`" + r.Glob + "`", r.Reason, exp})
	}
	table(w, []string{"agent", "paths", "reason", "expires"}, rows)
	fmt.Fprintf(w, "## Tokens (slots: %d)\n\n", len(s.Tokens))
	rows = nil
	for _, t := range s.Tokens {
		st := "held"
		if t.Free {
			st = "free"
		}
		rows = append(rows, []string{t.Token, fmt.Sprint(t.Slot), st, t.HeldBy, t.Hold, fmt.Sprint(t.Epoch)})
	}
	table(w, []string{"token", "slot", "state", "held by", "hold", "epoch"}, rows)
	fmt.Fprintf(w, "## Pools (%d)\n\n", len(s.Pools))
	rows = nil
	for _, p := range s.Pools {
		rows = append(rows, []string{p.Name, p.StateText(), strings.Join(p.Queues, ", "), fmt.Sprintf("%d (%d-%d)", p.Drones, p.Min, p.Max),
			fmt.Sprint(p.ItemsDone), fmt.Sprint(p.ItemsFailed), fmt.Sprintf("%.1f/min", p.Throughput), fmt.Sprintf("%.0f%%", p.Utilization*100)})
	}
	table(w, []string{"pool", "state", "queues", "drones", "done", "failed", "throughput", "utilization"}, rows)
}

func mdJournal(w io.Writer, s *view.Snapshot) {
	fmt.Fprintf(w, "# Journal (newest first, %d shown)\n\n", len(s.Journal))
	var rows [][]string
	for i := len(s.Journal) - 1; i >= 0; i-- {
		e := s.Journal[i]
		rows = append(rows, []string{stamp(e.Time.Time), e.Type, e.Agent, e.Path, eventData(e)})
	}
	table(w, []string{"time", "type", "agent", "path", "details"}, rows)
}

// CheckExportDir refuses an export DIR inside the store (the pages would
// be taken for documents there, and travel with sync and backup:
// ErrInsideStore) or one that exists and is not a
// directory (ErrNotDir). The exports check it first; a caller that prints
// something before exporting checks it itself.
func CheckExportDir(v *view.View, dir string) error {
	if v.Store().Contains(dir) {
		return &fs.PathError{Op: "export", Path: dir, Err: docstore.ErrInsideStore}
	}
	// Refused before anything is rendered, with its own error rather
	// than the first page's "open DIR/index.html: not a directory".
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return &fs.PathError{Op: "export", Path: dir, Err: ErrNotDir}
	}
	return nil
}
