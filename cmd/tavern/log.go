package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/view"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher"
	"github.com/tavernhq/tavern/watcher/journal"
)

func newLogCommand() *cli.Command {
	return &cli.Command{
		Name:  "log",
		Usage: "show the event journal",
		Description: `Prints events from .tavern/events/, oldest first: one readable line each,
or with --json one JSON object per line (JSON lines, not an array, so
that --follow can stream; nothing at all when no event matches). --type
matches exactly, by prefix when it ends in "." (--type item. shows
item.claimed, item.completed...), or as a glob (agent*, *.claimed); a
type that is no event type tavern writes but is near one (item.claimd)
is warned about, and still looked for. --since takes a
duration back from now (90m, 2h; not negative, and 0 only with --follow:
the events from now on) or a time (RFC 3339, or YYYY-MM-DD); --until a
time (with --follow, one to come). --follow keeps printing new events
until interrupted; --poll goes with it. A day file rewritten under
--follow (a first sync joining the team's store) is said so on stderr and
read again from its start, unless it still holds the last line printed.
--path keeps the events of one document (agents/bob.md, the reference
agents/bob, or the file's path), or of the documents under a directory
(agents/ or agents); a path that names nothing in the store but is near
one that does (agnets/) is warned about, and still looked for. --where keeps the events about
documents whose fields match now (the expressions of ls --where, all must
hold, with its warnings of a likely typo): the journal records revisions, not fields, so a removed document
never matches. --machines also prints the journals of the other machines
of a synced store (tavern sync brings them to .tavern/events/<machine>/),
after this machine's, each event marked with its machine (text: the name
first; JSON: "from_machine"). --limit N prints only the newest N events
that match the other filters, still oldest first (tail -n N); with --follow,
those and then the new ones (tail -n N -f).

Examples:
   tavern log --since 1h
   tavern log --type item. --limit 20
   tavern log --type external --json
   tavern log --agent alice --follow
   tavern log --path agents/alice.md
   tavern log --kind agents --where role=builder
   tavern log --machines --type sync.conflict`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "type", Aliases: []string{"t"}, Usage: "event `TYPE` (repeatable)"},
			&cli.StringFlag{Name: "agent", Usage: "only events of `AGENT`"},
			&cli.StringFlag{Name: "parent", Usage: "only events with parent `AGENT`"},
			&cli.StringFlag{Name: "kind", Usage: "only events about documents of `KIND`"},
			whereFlag(), pathFlag(),
			&cli.StringFlag{Name: "since", Usage: "from `DUR` ago or from TIME"},
			&cli.StringFlag{Name: "until", Usage: "before `TIME`"},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "wait for and print new events"},
			&cli.DurationFlag{Name: "poll", Usage: "with --follow, also re-read every `DUR` (network filesystems; 0: inotify only)", Action: notNegative("poll")},
			&cli.BoolFlag{Name: "machines", Usage: "also the journals of other machines (a synced store; not with --follow)"},
			limitFlag("print only the newest `N` matching events, still oldest first (with --follow: then the new ones; not with --machines)", 0),
			jsonFlag(),
		},
		Action: runLog,
	}
}

func runLog(c *cli.Context) error {
	if c.NArg() != 0 {
		return usageErr("log takes no arguments")
	}
	f, err := eventFilter(c)
	if err != nil {
		return err
	}
	if s := c.String("since"); s != "" {
		if f.Since, err = parseSince(s, c.Bool("follow")); err != nil {
			return err
		}
	}
	if s := c.String("until"); s != "" {
		// A time, not a duration: with --follow it may be one to come,
		// so "90m" would be ambiguous.
		if _, derr := time.ParseDuration(s); derr == nil {
			return usageErr("--until %s: a time, not a duration: an RFC 3339 time, YYYY-MM-DD or now", s)
		}
		if f.Until, err = parseWhen(s, false); err != nil {
			return err
		}
		if c.Bool("follow") && !f.Until.After(time.Now()) {
			return usageErr("--until %s is past: --follow would wait for events before it for ever", s)
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return usageErr("--since %s is not before --until %s: no event is between them", c.String("since"), c.String("until"))
	}
	if !c.Bool("follow") && f.Since.After(time.Now()) {
		return usageErr("--since %s is to come: no event is newer yet (--follow waits for them)", c.String("since"))
	}
	if c.IsSet("poll") && !c.Bool("follow") {
		return usageErr("--poll re-reads the journal while following: it goes with --follow")
	}
	where, kind, err := whereConds(c)
	if err != nil {
		return err
	}
	dir, err := storeDir(c)
	if err != nil {
		return err
	}
	// A read of the journal: a tavern.md refused for its values does not
	// keep it from being read (the journal may say what changed it).
	s, err := docstore.OpenAnyConfig(dir)
	if err != nil {
		return err
	}
	warnNearAgent(c, s, "agent", f.Agent)
	warnNearAgent(c, s, "parent", f.Parent)
	warnNearTypes(c, f.Types)
	warnWhere(c, s, kind, where)
	f.Path = eventPath(s, f.Path)
	warnNearPath(c, s, c.String("path"), f.Path)
	out := eventPrinter(c)
	var m *watcher.DocMatcher
	if len(where) > 0 {
		m = watcher.NewDocMatcher(s, where)
	}
	matching := func(p func(journal.Event, error) bool) func(journal.Event, error) bool {
		if m == nil {
			return p
		}
		return func(e journal.Event, err error) bool {
			if err != nil || m.Match(e) {
				return p(e, err)
			}
			return true
		}
	}
	print := matching(out)
	if c.Bool("machines") && c.Bool("follow") {
		return usageErr("--machines reads what the last sync brought: it does not go with --follow")
	}
	if c.IsSet("limit") && c.Bool("machines") {
		return usageErr("--limit keeps this machine's newest events: it does not go with --machines")
	}
	read := print
	var tail *eventTail
	if n := c.Int("limit"); n > 0 {
		tail = &eventTail{n: n}
		read = matching(func(e journal.Event, err error) bool {
			if err != nil {
				return out(e, err) // a bad line is said at once, not counted
			}
			tail.add(e)
			return true
		})
	}
	cur, err := journal.Read(dir, f, read)
	if tail != nil {
		tail.flush(out)
	}
	if err == nil && c.Bool("machines") {
		asJSON := c.Bool("json")
		err = journal.ReadOthers(dir, f, func(machine string, e journal.Event, err error) bool {
			if err != nil {
				return print(e, err)
			}
			if m != nil && !m.Match(e) {
				return true
			}
			if asJSON {
				b, _ := json.Marshal(e)
				name, _ := json.Marshal(machine)
				outf(c, "{\"from_machine\":%s,%s\n", name, b[1:])
			} else {
				outf(c, "%s  %s\n", machine, formatEvent(e))
			}
			return true
		})
	}
	if err != nil || !c.Bool("follow") {
		return err
	}
	if m != nil {
		m.Fresh = true // new events: their documents as they are now
	}
	err = journal.Follow(c.Context, dir, cur, f, c.Duration("poll"), print)
	if c.Context.Err() != nil {
		return nil // interrupted: the normal way to stop --follow
	}
	return err
}

// eventTail keeps the newest n events read, for log --limit: the
// journal is read oldest first, so which are the newest is known only at
// its end.
type eventTail struct {
	n      int
	events []journal.Event
}

func (t *eventTail) add(e journal.Event) {
	if len(t.events) == t.n {
		t.events = append(t.events[:0], t.events[1:]...)
	}
	t.events = append(t.events, e)
}

// flush prints the events kept, oldest first, as log prints them.
func (t *eventTail) flush(print func(journal.Event, error) bool) {
	for _, e := range t.events {
		print(e, nil)
	}
	t.events = nil
}

func whereFlag() cli.Flag {
	return exprFlag("where", []string{"w"}, "only documents whose fields match `EXPR` (as ls --where; repeatable)")
}

func pathFlag() cli.Flag {
	return &cli.StringFlag{Name: "path", Usage: "only the document `PATH` (store-relative, a reference, or the file's path), or those under a directory"}
}

// whereConds parses the --where expressions. With --kind, an ordering of
// a numeric field by a bound that is no number is refused, as ls --where
// does: the answer would be empty. The kind (nil without --kind) is for
// warnWhere, once the store is open.
func whereConds(c *cli.Context) ([]docstore.Cond, *schema.Kind, error) {
	var conds []docstore.Cond
	for _, w := range exprs(c, "where") {
		cond, err := docstore.ParseWhere(w)
		if err != nil {
			return nil, nil, err
		}
		conds = append(conds, cond)
	}
	k, err := schema.Lookup(c.String("kind"))
	if err != nil || c.String("kind") == "" {
		return conds, nil, nil
	}
	for _, cond := range conds {
		if err := cond.CheckKind(k); err != nil {
			return nil, nil, err
		}
	}
	return conds, k, nil
}

// eventFilter builds the filter shared by log and watch.
func eventFilter(c *cli.Context) (journal.Filter, error) {
	f := journal.Filter{Types: c.StringSlice("type"), Agent: c.String("agent"), Parent: c.String("parent"), Path: c.String("path")}
	if k := c.String("kind"); k != "" {
		kind, err := schema.Lookup(k)
		if err != nil {
			return f, err
		}
		f.Kinds = []string{kind.Name}
	}
	return f, f.Check()
}

// parseSince reads --since: a duration back from now, or a time. A
// negative duration would start in the future, and 0 at this instant,
// before any event could be read: both mean nothing, so they are refused
// as usage errors rather than answered with an empty list. With follow
// (log --follow), 0 means something: only the events from now on.
func parseSince(s string, follow bool) (time.Time, error) {
	if s == "now" {
		s = "0s" // as journalctl --since now: from this instant
	}
	if d, err := parseDuration(s); err == nil {
		switch {
		case d < 0:
			return time.Time{}, usageErr("--since %s: a duration cannot be negative; give how far back, like 90m", s)
		case d == 0 && !follow:
			return time.Time{}, usageErr("--since %s: 0 back from now is now, and nothing is newer; give how far back, like 90m", s)
		}
	}
	return parseWhen(s, true)
}

// parseDuration is time.ParseDuration with days in front ("7d",
// "1d12h", "-1d"): a week back is what people type, and Go has no unit
// for it. A day is 24 hours.
func parseDuration(s string) (time.Duration, error) {
	num, rest, ok := strings.Cut(s, "d")
	if !ok {
		return time.ParseDuration(s)
	}
	neg := strings.HasPrefix(num, "-")
	n, err := strconv.ParseUint(strings.TrimPrefix(num, "-"), 10, 16)
	if err != nil || num == "" {
		return time.ParseDuration(s) // its error names s
	}
	d := time.Duration(n) * 24 * time.Hour
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil || r < 0 {
			return time.ParseDuration(s)
		}
		d += r
	}
	if neg {
		d = -d
	}
	return d, nil
}

// parseWhen reads "90m" (ago, if ago is allowed), an RFC 3339 time or a
// date. A negative duration would be a time in the future: refused.
func parseWhen(s string, ago bool) (time.Time, error) {
	if s == "now" {
		return time.Now(), nil
	}
	if ago {
		if d, err := parseDuration(s); err == nil {
			if d < 0 {
				return time.Time{}, usageErr("%s: a duration cannot be negative; give how far back, like 90m", s)
			}
			return time.Now().Add(-d), nil
		}
	}
	if t, err := schema.ParseTime(s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, s, time.Local); err == nil {
		return t, nil
	}
	if !ago {
		return time.Time{}, usageErr("bad time %q: want an RFC 3339 time, YYYY-MM-DD or now", s)
	}
	return time.Time{}, usageErr("bad time %q: want a duration like 90m or 7d, an RFC 3339 time, YYYY-MM-DD or now", s)
}

// eventPrinter prints events as JSON lines or one readable line each;
// malformed journal lines are reported on stderr and skipped.
func eventPrinter(c *cli.Context) func(journal.Event, error) bool {
	asJSON := c.Bool("json")
	return func(e journal.Event, err error) bool {
		if err != nil {
			errf(c, "tavern: %v\n", err)
			return true
		}
		if asJSON {
			b, _ := json.Marshal(e)
			outf(c, "%s\n", b)
			return true
		}
		outf(c, "%s\n", formatEvent(e))
		return true
	}
}

func formatEvent(e journal.Event) string {
	var b strings.Builder
	b.WriteString(e.Time.Local().Format("2006-01-02 15:04:05.000"))
	b.WriteString("  ")
	b.WriteString(e.Type)
	for _, kv := range [][2]string{{"", e.Path}, {"agent=", e.Agent}, {"parent=", e.Parent}, {"queue=", e.Queue}, {"item=", e.Item}, {"rev=", e.Rev}} {
		if kv[1] != "" {
			b.WriteString("  " + kv[0] + kv[1])
		}
	}
	keys := make([]string, 0, len(e.Data))
	for k := range e.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := e.Data[k]
		if list, ok := v.([]any); ok {
			parts := make([]string, len(list))
			for i, x := range list {
				parts[i] = fmt.Sprint(x)
			}
			v = strings.Join(parts, ",")
		} else if list, ok := v.([]string); ok {
			v = strings.Join(list, ",")
		}
		// One line per event: a value with newlines (a dropped body line,
		// a lost item copy) shows its first line, as sync's conflict lines
		// do; --json carries it whole.
		fmt.Fprintf(&b, "  %s=%s", k, firstLine(fmt.Sprint(v)))
	}
	// Event data quotes what someone wrote (a failure's reason).
	return view.Visible(b.String())
}

// eventPath turns --path into the store-relative form the journal
// records, which alone it matched: agents/bob (a reference, as show
// takes), agents (a directory without its "/") and .tavern/agents/bob.md
// (the file's path) answered nothing. A reference to a document removed
// since is its path still (its events remain); anything else is kept as
// given.
func eventPath(s *docstore.Store, p string) string {
	if p == "" {
		return p
	}
	// A file or directory inside the store, named as the filesystem
	// names it (absolute, or from the working directory).
	if fi, err := os.Stat(p); err == nil {
		if rel, err := s.Rel(p); err == nil {
			if fi.IsDir() {
				return rel + "/"
			}
			return rel
		}
	}
	if strings.HasSuffix(p, "/") {
		return p
	}
	if fi, err := os.Stat(filepath.Join(s.Root(), filepath.FromSlash(p))); err == nil && fi.IsDir() {
		return p + "/"
	}
	if rel, err := s.Resolve(p); err == nil {
		return rel
	}
	return p
}

// warnNearTypes says when a --type names no event type tavern writes but
// is near one (item.claimd): log and watch would show nothing for a typo.
// Prefixes (item.) and globs (agent*) are never warned about.
func warnNearTypes(c *cli.Context, types []string) {
	for _, t := range types {
		if h := journal.TypeHint(t); h != nil {
			warnf(c, nil, "--type %w; showing its events, if any", h)
		}
	}
}

// warnNearPath says when --path (store-relative, as eventPath made it)
// names nothing in the store but is near something that is there
// (agnets/ for agents/): log and watch would show nothing for a typo. A
// path near nothing is taken as meant (a removed document still has its
// events).
func warnNearPath(c *cli.Context, s *docstore.Store, given, rel string) {
	if rel == "" {
		return
	}
	if near := s.NearPath(rel); len(near) > 0 {
		warnf(c, schema.ErrLikelyTypo, "--path %s: no such document or directory (did you mean %s?); showing its events, if any", given, schema.NearList(near))
	}
}

// warnNearAgent says when --agent (or --parent, flag) names no agent but
// is near one that exists (--agent bobb): log and watch would show nothing
// for a typo. A name near none is taken as meant (an agent removed since
// still has its events).
func warnNearAgent(c *cli.Context, s *docstore.Store, flag, name string) {
	var hint *agents.RefHintError
	if errors.As(agents.AgentHint(s, "--"+flag, name), &hint) {
		warnf(c, hint, "--%s %s: no such agent (did you mean %s?); showing its events, if any", flag, name, schema.NearList(hint.Near))
	}
}
