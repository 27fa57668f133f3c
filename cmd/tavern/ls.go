package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher"
)

func newLsCommand() *cli.Command {
	return &cli.Command{
		Name:      "ls",
		Usage:     "list documents of a kind, or under a directory of the store",
		ArgsUsage: "KIND | DIR/",
		Description: `Lists documents, filtered by --where (all must match), sorted and limited.
KIND is a kind's name (tavern schema lists them). DIR is a directory of the
store, with or without its trailing slash (and .tavern/ in front, as a
shell completes it, or any path to it: ../.tavern/queues/Q from a
subdirectory): the documents of the kind kept under it, in path
order unless --sort. So ls queues/Q/pending/ is queue Q's order, the order
queue take claims in (priority, then age), and ls queues/Q lists all of Q's
items; a DIR that names nothing (queues/typo/pending/) exits 3, while
one not made yet (queues/Q/dead/) is an empty list. A KIND/NAME reference (items/ID, agents/alice) is not a directory:
show prints that document, and --where filters a kind (--where queue=Q).
EXPR is field=value, field!=value, field<N, field<=N, field>N, field>=N,
field~substring (case-insensitive) or field? (exists); spaces around the
field and the value are dropped ('state = idle'). Fields may be dotted
(bookmarks.general). A field one letter from one of the kind's (stat for
state), field=value with a value outside the field's enum (state=idel),
or a queue or agent name near an existing one that names none
(queue=biuld, parent=bbo) is most likely a typo: a warning on stderr says
so, and the query still runs. A list field matches = and ~ if any entry does. Fields
are compared as the current schema sees them (older documents migrated in
memory). < <= > >= compare as numbers when both sides are numbers, as times
when both are timestamps, else as text; a field the kind declares numeric
(spawns, priority) ordered by a bound that is no number is refused
(exit 2): it would match nothing. So is a field it declares a time
(updated, created) ordered by a bound that is no time, which would
compare as text: a time is RFC 3339 (2026-11-26T10:00:00Z), a date
(2026-11-26, midnight UTC), a month (2026-11) or a year (2026), each from
its first instant; durations (2h) are not bounds.
--sort -field sorts descending; documents without the field sort last. A
--sort field the kind does not declare and no listed document has sorts
nothing: a warning says so, with the fields near it.
--limit applies after sorting. Documents that fail validation are listed and
marked INVALID; files that do not parse are not listed, and are reported
whatever --where says (no condition can hold for them). Each problem gives
one line on stderr (a JSON error object under --json) and ls still exits 0.
An empty result is not an error: exit 0, and [] under --json.
--json prints an array of show --json objects without "body" (add --body).

Examples:
   tavern ls agents --where state=working
   tavern ls queues/build/pending/
   tavern ls items --where queue=build --where 'priority<2' --sort priority --limit 10 --json`,
		Flags: []cli.Flag{
			exprFlag("where", []string{"w"}, "filter `EXPR` (repeatable)"),
			&cli.StringFlag{Name: "sort", Usage: "sort by `FIELD` (-FIELD for descending)"},
			limitFlag("print at most `N` documents (default: all)", 0),
			&cli.BoolFlag{Name: "body", Usage: "include bodies in --json output"},
			jsonFlag(),
		},
		Action: runLs,
	}
}

func runLs(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("ls takes one KIND or DIR/ (see `tavern schema` for the kinds)")
	}
	arg := c.Args().First()
	// A path to a directory of the store from elsewhere (../.tavern/...
	// from a subdirectory, an absolute path), as show takes a document's.
	if p := filepath.ToSlash(arg); filepath.IsAbs(arg) || strings.HasPrefix(p, "../") {
		s, err := openStore(c)
		if err != nil {
			return err
		}
		if rel, err := s.Rel(arg); err == nil {
			arg = rel
		}
	}
	k, under, err := lsKind(arg)
	if err != nil {
		return err
	}
	args := lsArgs{Kind: k.Name, Where: exprs(c, "where"), Sort: c.String("sort"), Limit: c.Int("limit")}
	conds, stateConds, err := lsConditions(k, args.Where)
	if err != nil {
		return err
	}
	s, err := openStore(c)
	if err != nil {
		return err
	}
	// An item's state too (state=claimd): it is matched apart, not lost.
	warnWhere(c, s, k, append(conds, stateConds...))
	sortHinted := false
	if f := strings.TrimPrefix(args.Sort, "-"); f != "" {
		if err := k.FieldHint(f, "", false); err != nil {
			warnf(c, nil, "--sort %s: %w", args.Sort, err) // the listing would keep its order
			sortHinted = true
		}
	}
	// Notes and messages of a direct channel are its readers' (the rule of
	// recv and notes): the directory of one is refused, a listing leaves
	// them out, before --limit counts.
	reader := envAgent()
	private := (k == schema.Note || k == schema.Chunk) && reader != ""
	if private {
		if err := messages.CheckRead(s, "ls", reader, under); err != nil {
			return err
		}
		args.Limit = 0
	}
	if under != "" {
		// A directory that names nothing (a typo: queues/biuld/pending/)
		// is not an empty listing; one not made yet (queues/Q/dead/) is.
		if named := k.NamedDir(strings.TrimSuffix(under, "/")); named != "" {
			if _, err := os.Stat(filepath.Join(s.Root(), filepath.FromSlash(named))); err != nil {
				return &notFoundError{msg: fmt.Sprintf("ls %s: no such directory in the store: %s/%s", c.Args().First(), named, nearDirHint(s, named))}
			}
		}
		args.Limit = 0 // applied below, to the documents under the directory
	}
	res, err := lsSelect(c, s, args)
	if err != nil {
		return err
	}
	if private {
		res.readable(s, reader, under == "", c.Int("limit"))
	}
	if under != "" {
		res.under(under, c.Int("limit"))
	}
	// Unparseable files are reported, not listed; documents that
	// parse but fail validation are listed and marked.
	for _, pr := range res.Problems {
		warnProblem(c, pr.Path, pr.Problem)
	}
	if args.Sort != "" && !sortHinted {
		if err := agents.SortHint(k, args.Sort, entryFields(res.Entries)); err != nil {
			warnf(c, nil, "%w", err)
		}
	}
	if c.Bool("json") {
		return printEntries(c, s, res.Entries)
	}
	for i := range res.Entries {
		res.Entries[i].Decode() // the daemon's answer keeps them encoded
	}
	printTable(c, k, res.Entries)
	return nil
}

// entryFields yields the frontmatter of entries, decoding each as it
// goes (the daemon's answer keeps them encoded): a caller that stops
// early decodes no more.
func entryFields(entries []watcher.Entry) iter.Seq[map[string]any] {
	return func(yield func(map[string]any) bool) {
		for i := range entries {
			entries[i].Decode()
			if !yield(entries[i].Fields) {
				return
			}
		}
	}
}

// nearDirHint is the "did you mean" of a directory the store does not
// have (queues/biuld): its near siblings that it has (queues/build).
func nearDirHint(s *docstore.Store, named string) string {
	parent, base := path.Split(named)
	ents, err := os.ReadDir(filepath.Join(s.Root(), filepath.FromSlash(parent)))
	if err != nil {
		return ""
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	near := schema.Near(base, names)
	if len(near) == 0 {
		return ""
	}
	for i := range near {
		near[i] = parent + near[i] + "/"
	}
	return " (did you mean " + schema.NearList(near) + "?)"
}

// lsKind reads ls's argument: a KIND, or a directory of the store
// (queues/Q/pending/, with or without the slash, .tavern/ in front or
// not), whose kind and path prefix (under, ending in "/") it returns. An
// argument that is neither gets a message saying what to use instead,
// not "unknown kind" of the whole path.
func lsKind(arg string) (k *schema.Kind, under string, err error) {
	p := strings.TrimPrefix(filepath.ToSlash(arg), "./")
	p = strings.TrimPrefix(p, ".tavern/")
	p = strings.TrimRight(p, "/")
	if !strings.Contains(p, "/") {
		k, err := schema.Lookup(p)
		return k, "", err
	}
	switch kinds := schema.KindsUnder(p); len(kinds) {
	case 1:
		return kinds[0], p + "/", nil
	case 0:
	default:
		names := make([]string, len(kinds))
		for i, k := range kinds {
			names[i] = k.Plural
		}
		return nil, "", usageErr("ls %s: documents of several kinds (%s) lie under it: give one KIND and --where", arg, strings.Join(names, ", "))
	}
	msg := fmt.Sprintf("ls %s: not a kind, and no documents lie under it as a directory of the store; ls takes a KIND (tavern schema lists them) or a directory such as queues/Q/pending/", arg)
	if near := schema.NearDirs(p); len(near) > 0 {
		for i := range near {
			near[i] += "/"
		}
		msg = fmt.Sprintf("ls %s: no documents lie under it as a directory of the store (did you mean %s?)", arg, schema.NearList(near))
	}
	first, rest, _ := strings.Cut(p, "/")
	if k, err := schema.Lookup(first); err == nil && strings.Count(rest, "/") < k.NameParts() {
		msg = fmt.Sprintf("ls %s: a KIND/NAME reference, not a directory: tavern show %s prints that document", arg, p)
		if dir := k.DirOfName(rest); dir != "" {
			msg += fmt.Sprintf(", and tavern ls %s/ lists the %s under %s", dir, k.Plural, dir)
		} else {
			msg += fmt.Sprintf(", and tavern ls %s --where FIELD=VALUE filters the %s", k.Plural, k.Plural)
		}
	}
	return nil, "", usageErr("%s", msg)
}

// under keeps the documents whose path starts with dir, and their
// problems, then at most limit of them (0: all).
func (r *lsResult) under(dir string, limit int) {
	problems := r.Problems[:0]
	for _, pr := range r.Problems {
		if strings.HasPrefix(pr.Path, dir) {
			problems = append(problems, pr)
		}
	}
	r.Problems = problems
	entries := r.Entries[:0]
	for _, e := range r.Entries {
		if strings.HasPrefix(e.Path, dir) {
			entries = append(entries, e)
		}
	}
	if limit > 0 && len(entries) > limit {
		entries = entries[:limit]
	}
	r.Entries = entries
}

// readable keeps the documents reader may read (messages.CheckRead),
// and their problems, then, when limit applies here, at most limit.
func (r *lsResult) readable(s *docstore.Store, reader string, limit bool, n int) {
	ok := func(p string) bool { return messages.CheckRead(s, "ls", reader, p) == nil }
	r.Problems = slices.DeleteFunc(r.Problems, func(pr pathProblem) bool { return !ok(pr.Path) })
	r.Entries = slices.DeleteFunc(r.Entries, func(e watcher.Entry) bool { return !ok(e.Path) })
	if limit && n > 0 && len(r.Entries) > n {
		r.Entries = r.Entries[:n]
	}
}

// lsArgs is an ls query, as sent to the query daemon.
type lsArgs struct {
	Kind  string   `json:"kind"`
	Where []string `json:"where,omitempty"`
	Sort  string   `json:"sort,omitempty"`
	Limit int      `json:"limit,omitempty"`
}

// lsResult is what ls prints: the problems of every selected document,
// then the listed entries.
type lsResult struct {
	Problems []pathProblem
	Entries  []watcher.Entry
}

type pathProblem struct {
	Path string `json:"path"`
	watcher.Problem
}

// lsSelect answers an ls query from the query daemon when one answers,
// else from a one-shot projection: the index cache (.tavern/.index)
// means only documents changed since the last run are read.
func lsSelect(c *cli.Context, s *docstore.Store, a lsArgs) (*lsResult, error) {
	info, payload, ok, err := askDaemon(c, s, "ls", a)
	if err != nil {
		return nil, err
	}
	if ok {
		res := &lsResult{}
		if err := json.Unmarshal(info, &res.Problems); err == nil {
			if res.Entries, err = watcher.DecodeEntries(payload); err == nil {
				return res, nil
			}
		}
	}
	p, err := watcher.Open(s, watcher.Options{Cache: true, Kinds: []string{a.Kind}, Progress: progress(c, "index", "documents")})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return lsRun(p, a, c.Bool("json")) // JSON is written from the encoded fields
}

// lsRun selects an ls query's entries from a projection: the one-shot
// path and the daemon's handler alike. With encoded (the daemon, which
// passes the entries on) their fields stay as the projection holds them.
func lsRun(p *watcher.Projection, a lsArgs, encoded bool) (*lsResult, error) {
	k, err := schema.Lookup(a.Kind)
	if err != nil {
		return nil, err
	}
	conds, stateConds, err := lsConditions(k, a.Where)
	if err != nil {
		return nil, err
	}
	// Files that do not parse are reported whatever --where says, as
	// without it: a condition on a field would pass over them in silence.
	entries, err := p.Query(watcher.Query{Kind: k.Name, Where: conds, Sort: a.Sort, Encoded: encoded, Unparsed: true})
	if err != nil {
		return nil, err
	}
	res := &lsResult{Problems: []pathProblem{}}
	listed := entries[:0]
	for _, e := range entries {
		for _, pr := range e.Errors {
			res.Problems = append(res.Problems, pathProblem{Path: e.Path, Problem: pr})
		}
		if e.Parsed() && matchState(stateConds, itemState(e.Kind, e.Path)) {
			listed = append(listed, e)
		}
	}
	if a.Limit > 0 && len(listed) > a.Limit {
		listed = listed[:a.Limit]
	}
	res.Entries = listed
	return res, nil
}

// lsConditions parses --where; an item's state is its directory, not a
// field, so conditions on it come apart.
func lsConditions(k *schema.Kind, where []string) (conds, stateConds []docstore.Cond, err error) {
	for _, w := range where {
		cond, err := docstore.ParseWhere(w)
		if err != nil {
			return nil, nil, err
		}
		if err := cond.CheckKind(k); err != nil {
			return nil, nil, err
		}
		if k == schema.Item && cond.Field == "state" {
			stateConds = append(stateConds, cond)
			continue
		}
		conds = append(conds, cond)
	}
	return conds, stateConds, nil
}

// warnWhere prints the library's warnings of --where conditions
// (agents.WhereHints): a field or value of the kind, or a name of a queue
// or an agent, that most likely makes the answer empty by a typo. The
// query still runs.
func warnWhere(c *cli.Context, s *docstore.Store, k *schema.Kind, conds []docstore.Cond) {
	for _, err := range agents.WhereHints(s, k, conds) {
		warnf(c, nil, "%w", err)
	}
}

func printEntries(c *cli.Context, s *docstore.Store, entries []watcher.Entry) error {
	if len(entries) == 0 {
		return writeOut(c, []byte("[]\n"))
	}
	withBody := c.Bool("body")
	// A long listing is written on every core, each a run of documents
	// into its own buffer, then the buffers in order: the documents are
	// independent, and writing 1,800 of them was the one-shot ls's
	// longest step after opening the projection.
	parts := 1
	if len(entries) >= 256 {
		parts = min(runtime.GOMAXPROCS(0), 8)
	}
	bufs := make([][]byte, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for k := range parts {
		lo, hi := k*len(entries)/parts, (k+1)*len(entries)/parts
		wg.Add(1)
		go func() {
			defer wg.Done()
			// 1 KiB a document is more than most need: growing a buffer
			// of megabytes copies it and faults its pages in twice, while
			// pages of the estimate never written cost nothing.
			b := make([]byte, 0, 1024*(hi-lo)+16)
			for i := lo; i < hi; i++ {
				o, err := entryJSON(s, &entries[i], withBody)
				if err == nil {
					b, err = appendDocAt(b, i, o)
				}
				if err != nil {
					errs[k] = err
					return
				}
			}
			bufs[k] = b
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	bufs[parts-1] = append(bufs[parts-1], "\n]\n"...)
	return writeOut(c, bufs...)
}

// summaryFields are shown as columns by `ls` when a kind has them.
var summaryFields = []string{"state", "status", "role", "queue", "title", "priority", "attempts", "claimed_by", "topic", "domain", "description", "message_count"}

func printTable(c *cli.Context, k *schema.Kind, docs []watcher.Entry) {
	var cols []string
	for _, f := range summaryFields {
		if k.Field(f) != nil {
			cols = append(cols, f)
		}
	}
	if len(cols) > 4 {
		cols = cols[:4]
	}
	item := k == schema.Item
	if item {
		cols = append([]string{"state"}, cols...)
	}
	// Buffered: tabwriter writes each cell separately, which on a big
	// listing is thousands of write(2) calls.
	bw := bufio.NewWriterSize(c.App.Writer, 64<<10)
	defer bw.Flush()
	tw := newTable(bw, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "NAME\t%s\tREV\n", strings.ToUpper(strings.Join(cols, "\t")))
	for _, d := range docs {
		row := []string{d.Name}
		for i, col := range cols {
			val := ""
			if item && i == 0 {
				val = itemState(d.Kind, d.Path)
			} else if x, ok := d.Fields[col]; ok && x != nil {
				val = fmt.Sprint(x)
			}
			if len(val) > 40 {
				val = val[:37] + "..."
			}
			row = append(row, val)
		}
		rev := d.Rev
		if !d.Valid {
			rev += " INVALID"
		}
		fmt.Fprintf(tw, "%s\t%s\n", strings.Join(row, "\t"), rev)
	}
	tw.Flush()
}

// warnProblem reports one problem of a listed (or unlistable) document:
// a JSON error object under --json, else a text line.
func warnProblem(c *cli.Context, path string, pr watcher.Problem) {
	if !c.Bool("json") {
		errf(c, "tavern: %s\n", pr.Msg)
		return
	}
	obj := map[string]any{"error": pr.Msg, "code": exitInvalid, "kind": kindWarning, "path": path, "line": nil, "col": nil}
	if pr.Line > 0 {
		obj["line"], obj["col"] = pr.Line, pr.Col
	}
	b, _ := json.Marshal(obj)
	errf(c, "%s\n", b)
}

// matchState applies --where conditions on an item's state.
func matchState(conds []docstore.Cond, state string) bool {
	for _, c := range conds {
		if !c.Match(map[string]any{"state": state}) {
			return false
		}
	}
	return true
}
