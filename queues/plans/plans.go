package plans

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Event types of this package.
const (
	EventImported  = "plan.imported"
	EventTicked    = "plan.ticked"    // the engine ticked a box: its item is done
	EventAdded     = "plan.added"     // a new box became an item
	EventCancelled = "plan.cancelled" // a removed box cancelled its item
	EventConflict  = "plan.conflict"  // a hand edit the engine will not act on
	EventSynced    = "plan.synced"
	// An item of the plan stopped waiting for a cancelled one (followDeps).
	EventDependencyDropped = "plan.dependency_dropped"
	// An item of the plan waits again (or newly) for one its box waits
	// for: reopened, or a new box nested under it.
	EventDependencyAdded = "plan.dependency_added"
)

var (
	// ErrPlan is wrapped by errors in a plan's checklist (path:line).
	ErrPlan = errors.New("plan")
	// ErrExists is returned by Import for a plan that exists.
	ErrExists = fs.ErrExist
)

// HandMadeError is a file in plans/ without frontmatter: a checklist put
// there by hand, not a plan (import writes the frontmatter a plan is: its
// queue and the items of its boxes). It matches Err, the file's
// *docstore.ParseError (docstore.ErrNoFrontmatter), and says how a plan
// is made.
type HandMadeError struct {
	Op   string // "read plan"
	Path string // plans/NAME.md
	Err  error
}

func (e *HandMadeError) Error() string {
	name := strings.TrimSuffix(path.Base(e.Path), ".md")
	return fmt.Sprintf("%v (a plan is made by `tavern plan import FILE.md --queue Q`, which writes its frontmatter: move the file out of plans/ and import it, e.g. `tavern plan import %s.md --queue Q`)", e.Err, name)
}

func (e *HandMadeError) Unwrap() error { return e.Err }

// handMade is err, a plan file's read error, as a *HandMadeError when the
// file has no frontmatter.
func handMade(err error) error {
	var pe *docstore.ParseError
	var he *HandMadeError
	if !errors.As(err, &pe) || !errors.Is(err, docstore.ErrNoFrontmatter) || errors.As(err, &he) {
		return err
	}
	return &HandMadeError{Op: "read plan", Path: pe.Path, Err: err}
}

// PlanError is a problem at a line of a plan file.
type PlanError struct {
	Path string
	Line int
	Msg  string
}

func (e *PlanError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return e.Path + ": " + e.Msg
}

func (e *PlanError) Unwrap() error { return ErrPlan }

// Position is where the error is (docstore.Position: the path, line
// and col of a JSON error object); a plan's line has no column.
func (e *PlanError) Position() (path string, line, col int) { return e.Path, e.Line, 0 }

// Path is the document path of a plan.
func Path(name string) string { return "plans/" + name + ".md" }

// ImportOptions describe a plan to import.
type ImportOptions struct {
	Name  string // the plan's name (plans/<name>.md)
	Queue string // the queue its items go to; must exist
	// Source names the file it came from, as given (errors at its lines
	// say FILE:LINE with it).
	Source string
	// File is the file's path: absolute, or relative to the project root
	// (the directory holding .tavern/); "" takes Source. It is recorded
	// as source:, relative to the project root when inside it, and a
	// file that a plan was imported from already is refused (ImportedError).
	File string
	Data []byte // the markdown checklist (frontmatter, if any, is kept)
	By   string // who imports (journaled)
}

// Import writes plans/<name>.md from a markdown checklist and makes an
// item of every unchecked box, children before their parents (a parent
// depends on the boxes nested under it) and after the tasks its
// (after: ...) marker names. The body is kept byte for byte.
func Import(b *queues.Broker, opt ImportOptions) (*Report, error) {
	s := b.Store()
	given := opt.Source
	if err := schema.ValidPlainName("plan", opt.Name); err != nil {
		return nil, err
	}
	if _, err := b.Queue(opt.Queue); err != nil {
		return nil, err
	}
	rel := Path(opt.Name)
	l, err := s.Lock(lockKey(opt.Name))
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	if _, err := s.ReadFile(rel); err == nil {
		return nil, fmt.Errorf("%s: %w (to follow changes to its file, edit the plan and run `tavern plan sync %s`)", rel, ErrExists, opt.Name)
	}
	record := sourceRecord(s, cmp.Or(opt.File, opt.Source))
	if record != "" {
		if other := importedFrom(s, record); other != "" {
			return nil, &ImportedError{Op: "plan import", Path: rel, Source: cmp.Or(opt.Source, record), Plan: other}
		}
	}
	opt.Source = record
	front, body := splitFront(opt.Data)
	tasks, err := Parse(body)
	if err != nil {
		return nil, err
	}
	src := cmp.Or(given, rel)
	// Lines are the file's: its own frontmatter, if any, comes first.
	first := bytes.Count(front, []byte("\n"))
	if err := checkTasks(src, first, tasks); err != nil {
		return nil, err
	}
	now := time.Now()
	// The document first, with no tasks: a crash while items are created
	// leaves a plan whose next sync adopts them (by plan and title).
	doc, err := newPlanDoc(opt, front, body, now)
	if err != nil {
		return nil, err
	}
	if err := s.Create(rel, doc); err != nil {
		return nil, err
	}
	rep := &Report{Plan: opt.Name}
	ids, err := createItems(b, opt.Name, opt.Queue, opt.By, src, first, tasks, nil, rep)
	if len(rep.Added) > 0 {
		m := map[string]string{}
		for i, id := range ids {
			if id != "" {
				m[id] = tasks[i].Key
			}
		}
		if _, uerr := s.Update(rel, func(d *docstore.Doc) error { return d.Set("tasks", m) }); uerr != nil {
			return rep, errors.Join(err, uerr)
		}
	}
	if err != nil {
		return rep, err
	}
	_, _ = b.Journal().Append(journal.Event{Type: EventImported, Kind: "plan", Path: rel, Queue: opt.Queue, Agent: opt.By,
		Data: map[string]any{"tasks": len(tasks), "items": len(ids), "source": opt.Source}})
	return rep, nil
}

func lockKey(name string) string { return "plans/" + name }

// sourceRecord is what a plan records as its source: file (absolute, or
// relative to the project root) relative to the project root, with
// slashes, when it is inside it; else absolute. "" for none.
func sourceRecord(s *docstore.Store, file string) string {
	if file == "" {
		return ""
	}
	root := filepath.Dir(s.Root())
	abs := file
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(root, abs)
	}
	abs = filepath.Clean(abs)
	if r, err := filepath.Rel(root, abs); err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(r)
	}
	return abs
}

// sourcePath is the file a plan's recorded source names: relative to the
// project root (also a value recorded, before, relative to where import
// ran: it names the file where it resolves from the project root).
func sourcePath(s *docstore.Store, source string) string {
	if filepath.IsAbs(source) {
		return filepath.Clean(source)
	}
	return filepath.Join(filepath.Dir(s.Root()), filepath.FromSlash(source))
}

// importedFrom is the name of a plan imported from the file record names
// (sourceRecord), "" when none is: the same path, or another path to the
// same file (a link).
func importedFrom(s *docstore.Store, record string) string {
	docs, _ := s.List(schema.Plan) // a plan that cannot be read is sync's to report
	want := sourcePath(s, record)
	wantInfo, werr := os.Stat(want)
	for _, d := range docs {
		src := d.String("source")
		if src == "" {
			continue
		}
		have := sourcePath(s, src)
		if have == want {
			return d.Name
		}
		if werr != nil {
			continue
		}
		if fi, err := os.Stat(have); err == nil && os.SameFile(fi, wantInfo) {
			return d.Name
		}
	}
	return ""
}

// splitFront separates an optional frontmatter block from a markdown file.
func splitFront(data []byte) (front, body []byte) {
	if !bytes.HasPrefix(data, []byte("---\n")) && !bytes.HasPrefix(data, []byte("---\r\n")) {
		return nil, data
	}
	d, err := docstore.Parse("plan.md", data)
	if err != nil {
		return nil, data
	}
	return data[:len(data)-len(d.Body())], d.Body()
}

func newPlanDoc(opt ImportOptions, front, body []byte, now time.Time) (*docstore.Doc, error) {
	fields := []docstore.Field{{Key: schema.VersionField, Value: schema.Plan.Version}, {Key: "id", Value: docstore.NewID()},
		{Key: "queue", Value: opt.Queue}}
	if opt.Source != "" {
		fields = append(fields, docstore.Field{Key: "source", Value: opt.Source})
	}
	fields = append(fields, docstore.Field{Key: "created", Value: now})
	if front == nil {
		return docstore.New(schema.Plan, fields, body)
	}
	// Keep the file's own frontmatter and add ours.
	d, err := docstore.Parse("plan.md", append(append([]byte(nil), front...), body...))
	if err != nil {
		return nil, err
	}
	if err := d.SetMany(fields); err != nil {
		return nil, err
	}
	return d, nil
}

// checkTasks reports markers that cannot be read and (after:) references
// that name no task or form a cycle; firstLine is the file line of the
// body's first line minus one.
func checkTasks(path string, firstLine int, tasks []*Task) error {
	var errs []error
	for _, t := range tasks {
		if t.MarkErr != "" {
			errs = append(errs, &PlanError{Path: path, Line: firstLine + t.Line, Msg: t.MarkErr})
		}
		for _, ref := range t.After {
			d, err := resolveAfter(tasks, ref, firstLine)
			switch {
			case err != nil:
				errs = append(errs, &PlanError{Path: path, Line: firstLine + t.Line, Msg: err.Error()})
			case d == t:
				// deps leaves it out: the box would wait for nothing
				// while its (after:) says it waits.
				errs = append(errs, &PlanError{Path: path, Line: firstLine + t.Line, Msg: fmt.Sprintf("(after: %s) names the task itself; name another task", ref)})
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if _, err := order(tasks, firstLine, func(*Task) bool { return true }); err != nil {
		var pe *PlanError
		if errors.As(err, &pe) {
			pe.Path = path
		}
		return err
	}
	return nil
}

// InstallChecks adds to `tavern check` what plan import and plan sync
// refuse in a plan: a marker that cannot be read, an (after:) that names
// no task or the task itself, a dependency cycle, each at path:line. A
// plan edited into one by hand was "valid" to check while every sync of
// it (a pool's, at each tick) failed.
func InstallChecks(s *docstore.Store) {
	s.AddCheck("plans", checkPlan)
}

func checkPlan(d *docstore.Doc) []error {
	if d.Kind != schema.Plan {
		return nil
	}
	tasks, err := Parse(d.Body())
	if err == nil {
		err = checkTasks(d.Path, bodyLine(d), tasks)
	}
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// deps lists the tasks t waits for: its children, then the tasks its
// (after:) marker names.
func deps(tasks []*Task, t *Task) []*Task {
	var out []*Task
	for _, k := range t.Kids {
		out = append(out, tasks[k])
	}
	for _, ref := range t.After {
		if d, err := resolveAfter(tasks, ref, 0); err == nil && d != t {
			out = append(out, d)
		}
	}
	return out
}

// order returns the tasks that want (open boxes, usually) in an order
// where each comes after the tasks it depends on; a cycle is a PlanError
// at the first task on it. Its lines are file lines: firstLine is the
// file line of the body's first line, minus one.
func order(tasks []*Task, firstLine int, want func(*Task) bool) ([]*Task, error) {
	state := make([]int, len(tasks)) // 1 visiting, 2 done
	var out []*Task
	var visit func(t *Task, path []*Task) error
	visit = func(t *Task, path []*Task) error {
		switch state[t.Index] {
		case 1:
			var names []string
			for _, p := range append(path, t) {
				names = append(names, fmt.Sprintf("%q (line %d)", p.Title, firstLine+p.Line))
			}
			return &PlanError{Line: firstLine + t.Line, Msg: "dependency cycle: " + strings.Join(names, " -> ")}
		case 2:
			return nil
		}
		state[t.Index] = 1
		for _, d := range deps(tasks, t) {
			if err := visit(d, append(path, t)); err != nil {
				return err
			}
		}
		state[t.Index] = 2
		if want(t) {
			out = append(out, t)
		}
		return nil
	}
	for _, t := range tasks {
		if err := visit(t, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// createItems adds an item for every open box among tasks that has none
// (known maps task index -> item id of boxes that have one), in
// dependency order. It returns the ids by task index ("" for none), and
// records what it did in rep (Sync has taken over the plan's orphan
// items by then: see orphans). A box that cannot become an item is an
// error at path:line, line being firstLine (the file line of the body's
// first line, minus one) plus the box's line in the body.
func createItems(b *queues.Broker, plan, queue, by, path string, firstLine int, tasks []*Task, known map[int]string, rep *Report) ([]string, error) {
	ids := make([]string, len(tasks))
	for i, id := range known {
		ids[i] = id
	}
	todo, err := order(tasks, firstLine, func(t *Task) bool { return t.Open() && ids[t.Index] == "" })
	if err != nil {
		return ids, err
	}
	for _, t := range todo {
		var dep []string
		for _, d := range deps(tasks, t) {
			// A cancelled task is not waited for (see followDeps).
			if id := ids[d.Index]; id != "" && !d.Cancelled() && !slices.Contains(dep, id) {
				dep = append(dep, id)
			}
		}
		body := t.Body
		if body == "" {
			body = t.Title + "\n"
		}
		it, err := b.Add(queue, queues.AddOptions{Title: t.Title, DependsOn: dep, Body: []byte(body), Gate: t.Gate, Plan: plan, By: by})
		if err != nil {
			return ids, fmt.Errorf("%s:%d: %q: %w", path, firstLine+t.Line, t.Title, err)
		}
		ids[t.Index] = it.ID
		rep.Added = append(rep.Added, it.ID)
		_, _ = b.Journal().Append(journal.Event{Type: EventAdded, Kind: "plan", Path: Path(plan), Item: it.ID, Queue: queue,
			Data: map[string]any{"line": t.Line, "title": t.Title}})
	}
	return ids, nil
}

// Report is what Import or Sync did.
type Report struct {
	Plan      string   `json:"plan"`
	Added     []string `json:"added,omitempty"`     // items made from new boxes
	Adopted   []string `json:"adopted,omitempty"`   // orphan items of the plan taken over
	Ticked    []string `json:"ticked,omitempty"`    // boxes ticked because their item is done
	Completed []string `json:"completed,omitempty"` // items completed by a box ticked by hand
	Cancelled []string `json:"cancelled,omitempty"` // items cancelled by a removed or [-] box
	Reopened  []string `json:"reopened,omitempty"`  // cancelled items whose box was reopened by hand ([-] back to [ ])
	// Items of the plan that stopped waiting for a cancelled one, and
	// that wait (again) for one (see followDeps).
	DepsDropped []Dependency `json:"dependencies_dropped,omitempty"`
	DepsAdded   []Dependency `json:"dependencies_added,omitempty"`
	Conflicts   []Conflict   `json:"conflicts,omitempty"` // hand edits not acted on
	Notes       []string     `json:"notes,omitempty"`

	queue string // the plan's queue, for the journal
}

// Changed reports whether the sync changed anything.
func (r *Report) Changed() bool {
	return len(r.Added)+len(r.Adopted)+len(r.Ticked)+len(r.Completed)+len(r.Cancelled)+len(r.Reopened)+len(r.DepsDropped)+len(r.DepsAdded) > 0
}

// Dependency is a dependency Sync took from or gave an item of the plan.
type Dependency struct {
	Item    string `json:"item"`
	Title   string `json:"title"`
	On      string `json:"dependency"`
	OnTitle string `json:"dependency_title"`
	// Why a dependency was dropped: "cancelled" (the task is won't do) or
	// "moved" (the box no longer waits for it: moved out from under it,
	// or its (after:) taken out).
	Reason string `json:"reason,omitempty"`
}

// Conflict is a hand edit of a plan the engine does not act on: it says
// what and why, and leaves both the box and the item as they are.
type Conflict struct {
	Line  int    `json:"line,omitempty"`
	Item  string `json:"item"`
	Title string `json:"title"`
	Msg   string `json:"message"`
}

func (c Conflict) String() string {
	if c.Line > 0 {
		return fmt.Sprintf("line %d %q (%s): %s", c.Line, c.Title, c.Item, c.Msg)
	}
	return fmt.Sprintf("%q (%s): %s", c.Title, c.Item, c.Msg)
}

// SyncOptions tune Sync.
type SyncOptions struct {
	By string // who syncs (journaled)
}

// Sync reconciles a plan and its items, both ways:
//
//   - an item that is done gets its box ticked (a one-line change);
//   - a box ticked by hand completes its item, [-] or a struck-through
//     ticked box (- [x] ~~text~~) cancels it (journaled as external);
//   - a new unchecked box becomes an item (and a dependency of the open
//     box it is nested under);
//   - a removed box cancels its pending item;
//   - a cancelled item whose box is open again ([-] back to [ ] by hand,
//     or a checkout of the plan) goes back to pending (Broker.Retry);
//   - the plan's pending items stop waiting for its cancelled items and
//     wait again for reopened ones (followDeps);
//   - an item of the plan (its plan: field) that the tasks: map does not
//     name is an orphan: a box of its title without an item takes it
//     over (then as above); one that no box takes lost its box and its
//     entry together (deleted by hand, or a checkout of a plan older
//     than the task) and is cancelled like a removed box's, pending
//     only: a claimed one is a Conflict until it ends (done, it stays
//     done; back to pending, a later sync cancels it), a done or dead
//     one is left as it is. Orphans are looked for when a box has no
//     item or the file changed since the last sync that looked (the
//     revision is kept in .tavern/.plans/<name>.scanned), so a sync of
//     an untouched plan reads no queue directory.
//
// A hand edit that contradicts the engine — a box ticked or removed
// while its item is claimed, ticked while a gate is pending — is
// reported as a Conflict and changes nothing. A box whose text is edited
// is a removed box plus a new one.
func Sync(b *queues.Broker, name string, opt SyncOptions) (*Report, error) {
	s := b.Store()
	if err := schema.ValidName(name); err != nil {
		return nil, fmt.Errorf("plan name: %w", err)
	}
	// A name that names no plan (a typo) creates nothing, not even the
	// plan's lock file.
	if _, err := s.Stat(Path(name)); errors.Is(err, fs.ErrNotExist) {
		return nil, unknownPlan(s, name, err)
	}
	l, err := s.Lock(lockKey(name))
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	var rep *Report
	for try := 0; try < 5; try++ {
		rep, err = syncOnce(b, name, opt)
		if !errors.Is(err, docstore.ErrConflict) {
			break
		}
	}
	fresh := 0
	if rep != nil {
		// Conflicts are journaled here, once per sync that ends (not per
		// retry), and only the ones not journaled already: a conflict
		// stays until someone resolves it, and every sync, status and
		// pool tick in between sees it again.
		fresh = journalConflicts(b, name, rep, err == nil)
	}
	if err != nil {
		return rep, err
	}
	if rep.Changed() || fresh > 0 {
		_, _ = b.Journal().Append(journal.Event{Type: EventSynced, Kind: "plan", Path: Path(name), Agent: opt.By, Data: map[string]any{
			"added": len(rep.Added), "adopted": len(rep.Adopted), "reopened": len(rep.Reopened), "ticked": len(rep.Ticked), "completed": len(rep.Completed), "cancelled": len(rep.Cancelled), "conflicts": len(rep.Conflicts),
			"dependencies_dropped": len(rep.DepsDropped), "dependencies_added": len(rep.DepsAdded)}})
	}
	return rep, nil
}

// conflictsDir holds, per plan, the conflicts its syncs last journaled
// (.tavern/.plans/<name>.conflicts, engine-private): what makes a
// conflict that persists journaled once, and again only when it comes
// back after it was resolved. Keeping it out of the plan's own file means
// a sync that finds nothing to do writes nothing there. scannedFile is
// there too.
const conflictsDir = ".plans"

// conflictKey is a conflict's identity: its item and message (which name
// the holder and attempt), not its line, which moves with other edits.
type conflictKey struct {
	Item string `json:"item"`
	Msg  string `json:"message"`
}

func conflictsFile(s *docstore.Store, name string) string {
	return filepath.Join(s.Root(), conflictsDir, name+".conflicts")
}

// loadConflicts reads the conflicts last journaled for a plan; a file
// missing or unreadable is none (the worst case is a conflict journaled
// twice).
func loadConflicts(s *docstore.Store, name string) []conflictKey {
	data, err := os.ReadFile(conflictsFile(s, name))
	if err != nil {
		return nil
	}
	var keys []conflictKey
	if json.Unmarshal(data, &keys) != nil {
		return nil
	}
	return keys
}

// saveConflicts replaces the file atomically (write, then rename), or
// removes it when there are none.
func saveConflicts(s *docstore.Store, name string, keys []conflictKey) error {
	path := conflictsFile(s, name)
	if len(keys) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	data, err := json.Marshal(keys)
	if err != nil {
		return err
	}
	return writePrivate(path, append(data, '\n'))
}

// writePrivate replaces an engine-private file atomically (write, then
// rename); no fsync: it is bookkeeping, and its loss only costs work.
func writePrivate(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// scannedFile holds, per plan, the revision of its file when a sync last
// saw every orphan of the plan (.tavern/.plans/<name>.scanned): a sync
// looks for orphans again only when the file is not that one any more.
func scannedFile(s *docstore.Store, name string) string {
	return filepath.Join(s.Root(), conflictsDir, name+".scanned")
}

// loadScanned is the revision recorded by saveScanned; "" (scan) when
// there is none or it cannot be read.
func loadScanned(s *docstore.Store, name string) string {
	data, err := os.ReadFile(scannedFile(s, name))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

func saveScanned(s *docstore.Store, name, rev string) error {
	return writePrivate(scannedFile(s, name), []byte(rev+"\n"))
}

// journalConflicts appends a plan.conflict event for each conflict of rep
// not journaled by an earlier sync, and records the current ones. With
// complete false (a sync that stopped on an error, whose report may lack
// some) the ones recorded before are kept. It returns how many it
// journaled. The caller holds the plan's lock.
func journalConflicts(b *queues.Broker, name string, rep *Report, complete bool) int {
	s := b.Store()
	prev := loadConflicts(s, name)
	var cur []conflictKey
	if !complete {
		cur = append(cur, prev...)
	}
	fresh := 0
	for _, c := range rep.Conflicts {
		k := conflictKey{Item: c.Item, Msg: c.Msg}
		if !slices.Contains(cur, k) {
			cur = append(cur, k)
		}
		if slices.Contains(prev, k) {
			continue
		}
		fresh++
		_, _ = b.Journal().Append(journal.Event{Type: EventConflict, Kind: "plan", Path: Path(name), Item: c.Item, Queue: rep.queue,
			Data: map[string]any{"line": c.Line, "message": c.Msg}})
	}
	byKey := func(a, b conflictKey) int {
		return cmp.Or(strings.Compare(a.Item, b.Item), strings.Compare(a.Msg, b.Msg))
	}
	slices.SortFunc(prev, byKey)
	slices.SortFunc(cur, byKey)
	if !slices.Equal(prev, cur) {
		_ = saveConflicts(s, name, cur) // bookkeeping: if lost, a conflict is journaled again
	}
	return fresh
}

// bodyLine is the file line of the body's first line, minus one.
func bodyLine(d *docstore.Doc) int {
	all := d.Bytes()
	return bytes.Count(all[:len(all)-len(d.Body())], []byte("\n"))
}

func readPlan(s *docstore.Store, name string) (*docstore.Doc, error) {
	d, err := s.Get(Path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, unknownPlan(s, name, err)
	}
	if err != nil {
		return nil, handMade(err)
	}
	if errs := d.Validate(false); len(errs) > 0 {
		return nil, &docstore.ValidationError{Path: d.Path, Errors: errs}
	}
	return d, nil
}

// unknownPlan is the error of a plan name that names nothing: a
// *schema.UnknownError with the plans near it, matching err (not found)
// too.
func unknownPlan(s *docstore.Store, name string, err error) error {
	var names []string
	ents, _ := os.ReadDir(filepath.Join(s.Root(), "plans"))
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".md"); ok && !e.IsDir() {
			names = append(names, n)
		}
	}
	return &schema.UnknownError{What: "plan", Name: name, Near: schema.Near(name, names), Err: err}
}

// boxItems maps each box's key to the item the tasks: map m says it
// stands for. A title on one box is known by its title. A repeated title
// ("Write tests" under two features) was known by position only ("Write
// tests (2)"), so removing the first such box shifted the second onto the
// removed box's item: a box nobody ticked showed done, a hand tick
// completed another item. A box of a repeated title keeps the item its
// parent box waits for (the plan's nesting), else an item that waits for
// its child boxes' items, else the item of its position; an item of the
// title that no box keeps is a removed box's.
func boxItems(b *queues.Broker, tasks []*Task, m map[string]string) (map[string]string, error) {
	byKey := map[string]string{}
	for id, k := range m {
		byKey[k] = id
	}
	count := map[string]int{}
	for _, t := range tasks {
		count[t.Title]++
	}
	// The map's items of each repeated title (in the file or in the map).
	cands := map[string][]string{}
	for _, t := range tasks {
		if _, seen := cands[t.Title]; seen {
			continue
		}
		var ids []string
		for id, k := range m {
			if k == t.Title || repeatOf(k, t.Title) {
				ids = append(ids, id)
			}
		}
		if count[t.Title] > 1 || len(ids) > 1 {
			sort.Strings(ids)
			cands[t.Title] = ids
		}
	}
	if len(cands) == 0 {
		return byKey, nil
	}
	deps := map[string][]string{} // item -> its depends_on, read once
	dependsOn := func(id string) ([]string, error) {
		if d, ok := deps[id]; ok {
			return d, nil
		}
		it, err := b.Get(id)
		if errors.Is(err, fs.ErrNotExist) {
			deps[id] = nil
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		deps[id] = it.DependsOn
		return it.DependsOn, nil
	}
	out := map[string]string{}
	for k, id := range byKey {
		if _, rep := cands[titleOfKey(k)]; !rep {
			out[k] = id
		}
	}
	assign := map[int]string{} // task index -> item
	for _, t := range tasks {
		if _, rep := cands[t.Title]; !rep {
			assign[t.Index] = byKey[t.Key]
		}
	}
	taken := map[string]bool{}
	pick := func(t *Task, ok func(id string) (bool, error)) (bool, error) {
		for _, id := range cands[t.Title] {
			if taken[id] {
				continue
			}
			good, err := ok(id)
			if err != nil {
				return false, err
			}
			if good {
				taken[id], assign[t.Index], out[t.Key] = true, id, id
				return true, nil
			}
		}
		return false, nil
	}
	var later []*Task
	for _, t := range tasks {
		if _, rep := cands[t.Title]; !rep {
			continue
		}
		found := false
		if p := t.Parent; p >= 0 && assign[p] != "" {
			pd, err := dependsOn(assign[p])
			if err != nil {
				return nil, err
			}
			if found, err = pick(t, func(id string) (bool, error) { return slices.Contains(pd, id), nil }); err != nil {
				return nil, err
			}
		}
		if !found && len(t.Kids) > 0 {
			var kids []string
			for _, k := range t.Kids {
				if assign[k] != "" {
					kids = append(kids, assign[k])
				}
			}
			var err error
			if found, err = pick(t, func(id string) (bool, error) {
				d, err := dependsOn(id)
				return len(kids) > 0 && slices.ContainsFunc(kids, func(k string) bool { return slices.Contains(d, k) }), err
			}); err != nil {
				return nil, err
			}
		}
		if !found {
			later = append(later, t)
		}
	}
	// No nesting tells them apart: by position, as the map says.
	for _, t := range later {
		if id := byKey[t.Key]; id != "" && !taken[id] && slices.Contains(cands[t.Title], id) {
			taken[id], assign[t.Index], out[t.Key] = true, id, id
		}
	}
	return out, nil
}

// repeatOf reports whether key is title's key of a repetition: "T (n)".
func repeatOf(key, title string) bool {
	rest, ok := strings.CutPrefix(key, title+" (")
	if !ok {
		return false
	}
	n, ok := strings.CutSuffix(rest, ")")
	_, err := strconv.Atoi(n)
	return ok && err == nil
}

// titleOfKey is the title a key of the map stands for: the key itself,
// or the title of "title (n)".
func titleOfKey(k string) string {
	if i := strings.LastIndex(k, " ("); i > 0 && repeatOf(k, k[:i]) {
		return k[:i]
	}
	return k
}

// taskMap reads the plan's tasks: field (item id -> box key).
func taskMap(d *docstore.Doc) map[string]string {
	m := map[string]string{}
	if raw, ok := d.Fields()["tasks"].(map[string]any); ok {
		for id, v := range raw {
			if k, ok := v.(string); ok {
				m[id] = k
			}
		}
	}
	return m
}

func syncOnce(b *queues.Broker, name string, opt SyncOptions) (*Report, error) {
	s := b.Store()
	rel := Path(name)
	d, err := readPlan(s, name)
	if err != nil {
		return nil, err
	}
	queue := d.String("queue")
	first := bodyLine(d)
	body := d.Body()
	tasks, err := Parse(body)
	if err != nil {
		return nil, err
	}
	if err := checkTasks(rel, first, tasks); err != nil {
		return nil, err
	}
	// No queue (removed, or queue: edited to a name that names none): its
	// items cannot be read, and a sync would take every one for gone and
	// write the plan without its tasks: map. Nothing is done or written.
	if err := queues.CheckQueue(s, queue); err != nil {
		at := rel
		if _, line, ok := d.FieldText("queue"); ok {
			at = fmt.Sprintf("%s:%d", rel, line+1) // the file's line: after the opening ---
		}
		return nil, fmt.Errorf("%s: queue: %w", at, err)
	}
	rep := &Report{Plan: name}
	m := taskMap(d)
	byKey, err := boxItems(b, tasks, m)
	if err != nil {
		return nil, err
	}
	newMap := map[string]string{}
	for id, k := range m {
		newMap[id] = k
	}
	known := map[int]string{}
	cur := map[string]*queues.Item{} // the items of the boxes, as this sync leaves them
	ticks := []int{}                 // body offsets to tick
	rep.queue = queue
	// Conflicts are journaled by Sync (journalConflicts): once, not at
	// every sync that sees them again.
	conflict := func(t *Task, id, msg string) {
		c := Conflict{Item: id, Msg: msg}
		if t != nil {
			c.Line, c.Title = first+t.Line, t.Title
		}
		rep.Conflicts = append(rep.Conflicts, c)
	}
	external := func(t *Task, id, action string) {
		_, _ = b.Journal().Append(journal.Event{Type: journal.TypeExternal, Kind: "plan", Path: rel, Item: id, Queue: queue,
			Data: map[string]any{"change": "box " + action + " by hand", "line": first + t.Line, "title": t.Title}})
	}
	// The plan's items that its tasks: map does not name (orphans, by
	// title): read when a box has no item, to take one over, and when the
	// file changed since the last sync that looked, to cancel the items
	// whose box and entry were removed together. Finding them reads the
	// queue's directories: a sync of a file nobody touched does not.
	var orph map[string][]string
	scanned := false // orph holds every orphan (pending and claimed at least)
	scan := func(withDone bool) { orph, scanned = orphans(b, name, queue, m, withDone) }
	present := map[string]bool{}
	goneItem := map[int]string{} // task index -> the item its entry named, whose file is gone
	for _, t := range tasks {
		id, ok := byKey[t.Key]
		var it *queues.Item
		if ok {
			present[id] = true
			it, err = b.Get(id)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				// Noted once we know what the box gets instead.
				goneItem[t.Index] = id
				delete(newMap, id)
				ok = false
			case err != nil:
				return nil, err
			}
		}
		if !ok {
			// A box without an item takes over an orphan of the same
			// title (a crash between adding an item and recording it, a
			// checkout of a plan older than its map), and acts on it as
			// on any box: an open box of a done item is ticked, a ticked
			// box completes it, [-] cancels it.
			if orph == nil {
				scan(true)
			}
			cands := orph[t.Title]
			if len(cands) == 0 {
				continue
			}
			id, orph[t.Title] = cands[0], cands[1:]
			it, err = b.Get(id)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			newMap[id] = t.Key
			rep.Adopted = append(rep.Adopted, id)
			if old, ok := goneItem[t.Index]; ok {
				rep.Notes = append(rep.Notes, fmt.Sprintf("line %d %q: item %s is gone; the box takes over item %s, of this plan and with its title", first+t.Line, t.Title, old, id))
				delete(goneItem, t.Index)
			}
		}
		known[t.Index] = id
		newMap[id] = t.Key // a repeated title's box may have moved (boxItems)
		cur[id] = it
		switch {
		case t.Cancelled():
			if it.State == queues.Done || (it.State == queues.Dead && it.Cancelled) {
				continue
			}
			if it.State == queues.Claimed {
				conflict(t, id, fmt.Sprintf("cancelled by hand while %s holds it (attempt %d); left as is", it.ClaimedBy, it.ClaimAttempt))
				continue
			}
			nit, err := b.Resolve(id, queues.ResolveOptions{Cancel: true, Reason: "cancelled in " + rel, By: rel, External: true})
			if err != nil {
				conflict(t, id, err.Error())
				continue
			}
			cur[id] = nit
			external(t, id, "cancelled")
			rep.Cancelled = append(rep.Cancelled, id)
		case t.Checked():
			if it.State == queues.Done {
				continue
			}
			if it.State == queues.Claimed {
				conflict(t, id, fmt.Sprintf("ticked by hand while %s holds it (attempt %d); the box stays ticked, the item stays claimed", it.ClaimedBy, it.ClaimAttempt))
				continue
			}
			nit, err := b.Resolve(id, queues.ResolveOptions{Reason: "ticked in " + rel, By: rel, External: true})
			if err != nil {
				conflict(t, id, "ticked by hand, but "+err.Error())
				continue
			}
			cur[id] = nit
			external(t, id, "ticked")
			rep.Completed = append(rep.Completed, id)
		default: // open box
			switch {
			case it.State == queues.Done:
				ticks = append(ticks, t.Offset)
				rep.Ticked = append(rep.Ticked, id)
			case it.State == queues.Dead && it.Cancelled:
				// The box was cancelled and is open again: the task is
				// back. (A dead item that failed is the dead letter's,
				// not the plan's.)
				back, err := b.Retry(it.Queue, id)
				if err != nil {
					conflict(t, id, "reopened by hand, but "+err.Error())
					continue
				}
				if len(back) == 1 {
					cur[id] = back[0]
				}
				external(t, id, "reopened")
				rep.Reopened = append(rep.Reopened, id)
			}
		}
	}
	// Boxes that are gone: cancel their items.
	gone := make([]string, 0)
	for id := range m {
		if !present[id] {
			gone = append(gone, id)
		}
	}
	sort.Strings(gone)
	for _, id := range gone {
		it, err := b.Get(id)
		if errors.Is(err, fs.ErrNotExist) {
			delete(newMap, id)
			continue
		}
		if err != nil {
			return nil, err
		}
		switch {
		case it.State == queues.Claimed:
			conflict(nil, id, fmt.Sprintf("%q: its box was removed while %s holds it; kept until it finishes", m[id], it.ClaimedBy))
			rep.Conflicts[len(rep.Conflicts)-1].Title = m[id]
			continue
		case it.State == queues.Done, it.State == queues.Dead && it.Cancelled:
		default:
			if _, err := b.Resolve(id, queues.ResolveOptions{Cancel: true, Reason: "its box was removed from " + rel, By: rel, External: true}); err != nil {
				return nil, err
			}
			rep.Cancelled = append(rep.Cancelled, id)
			_, _ = b.Journal().Append(journal.Event{Type: EventCancelled, Kind: "plan", Path: rel, Item: id, Queue: queue, Data: map[string]any{"title": m[id]}})
		}
		delete(newMap, id)
	}
	// Orphans no box took over: their box went with its tasks: entry (a
	// hand edit, a checkout of a plan older than the task). A pending one
	// is cancelled as a removed box's is; a claimed one is a conflict,
	// left to its holder (cancelled at a later sync if it comes back to
	// pending); a done or dead one stays as it is.
	prevRev := loadScanned(s, name)
	if orph == nil && prevRev != d.Rev {
		scan(false)
	}
	clean := prevRev == d.Rev || scanned // no orphan this sync leaves behind unseen
	var left []string
	for _, ids := range orph {
		left = append(left, ids...)
	}
	sort.Strings(left)
	for _, id := range left {
		it, err := b.Get(id)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		held := func(holder string) {
			conflict(nil, id, fmt.Sprintf("%q: its box and tasks entry were removed while %s holds it; kept until it finishes", it.Title, holder))
			rep.Conflicts[len(rep.Conflicts)-1].Title = it.Title
			clean = false // looked for again until it is no longer held
		}
		switch it.State {
		case queues.Claimed:
			held(it.ClaimedBy)
		case queues.Pending:
			_, err := b.Resolve(id, queues.ResolveOptions{Cancel: true, Reason: "its box and tasks entry were removed from " + rel, By: rel, External: true})
			if errors.Is(err, queues.ErrState) {
				held("someone") // claimed since it was read
				continue
			}
			if err != nil {
				return nil, err
			}
			rep.Cancelled = append(rep.Cancelled, id)
			_, _ = b.Journal().Append(journal.Event{Type: EventCancelled, Kind: "plan", Path: rel, Item: id, Queue: queue,
				Data: map[string]any{"title": it.Title, "orphan": true}})
		}
	}
	// New open boxes: items.
	ids, cerr := createItems(b, name, queue, opt.By, rel, first, tasks, known, rep)
	if cerr == nil {
		// A queue: edited by hand to a name that names no queue (tavern
		// set refuses it) showed "in sync" until a new box failed (its
		// error, above, names the box): say so at every sync.
		if err := queues.CheckQueue(s, queue); err != nil {
			cerr = fmt.Errorf("%s: queue: %w", rel, err)
		}
	}
	for _, t := range tasks {
		old, ok := goneItem[t.Index]
		if !ok {
			continue
		}
		var what string
		switch {
		case ids[t.Index] != "":
			what = "the box becomes a new item, " + ids[t.Index]
		case t.Checked():
			what = "the box is ticked, so no item takes its place"
		case t.Cancelled():
			what = "the box is cancelled, so no item takes its place"
		default: // createItems failed first: its error says why
			what = "the box has no item yet"
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("line %d %q: item %s is gone; %s", first+t.Line, t.Title, old, what))
	}
	for _, t := range tasks {
		if id := ids[t.Index]; id != "" && known[t.Index] == "" {
			newMap[id] = t.Key
		}
	}
	// The items wait for what the plan says, now that boxes are
	// cancelled, reopened and added: a new box nested under an existing
	// one, a reopened box, a cancelled one.
	// An error here is the sync's, after the file is written: the items
	// just made must get their entries.
	cerr = errors.Join(cerr, followDeps(b, name, first, tasks, ids, known, cur, rep))
	// What the last scan saw: the file as this sync leaves it, when no
	// orphan can hide in it (our own write adds none).
	record := func(rev string) {
		if clean && cerr == nil && rev != prevRev {
			_ = saveScanned(s, name, rev) // bookkeeping: if lost, the next sync scans again
		}
	}
	if len(ticks) == 0 && mapsEqual(m, newMap) {
		record(d.Rev)
		return rep, cerr
	}
	newBody := append([]byte(nil), body...)
	for _, off := range ticks {
		newBody[off] = 'x'
	}
	nd, err := s.UpdateIf(rel, d.Rev, func(doc *docstore.Doc) error {
		if len(ticks) > 0 {
			doc.SetBody(newBody)
		}
		if !mapsEqual(m, newMap) {
			return doc.Set("tasks", newMap)
		}
		return nil
	})
	if err != nil {
		return rep, errors.Join(cerr, err)
	}
	record(nd.Rev)
	for _, id := range rep.Ticked {
		_, _ = b.Journal().Append(journal.Event{Type: EventTicked, Kind: "plan", Path: rel, Item: id, Queue: queue, Data: map[string]any{"message": "its box is ticked in " + rel}})
	}
	return rep, cerr
}

// followDeps keeps the dependencies the plan gives its items in step
// with its boxes; the plan is the one place that says which of its tasks
// waits for which. A pending item of the plan stops waiting for an item
// of the plan that
//
//   - is cancelled ("won't do": waiting for it would block the item for
//     ever; its box marked [-] or struck through, removed, or an orphan
//     cancelled), or
//   - is still to do but the item's open box no longer waits for it: its
//     box was moved out from under this one, or an (after:) naming it
//     was taken out. The item kept waiting for a task the plan had moved
//     elsewhere — for ever once that task failed, and in the wrong order
//     when the two boxes swapped places.
//
// A pending item of an open box waits for the items of the open boxes
// the plan says it waits for (nested under it, (after:)): one missing is
// added (a box reopened, a new box nested under it, a box moved under
// it) unless it is done (nothing to wait for). Drops come first, so two
// boxes that swapped places are in the new order in one sync. Items
// outside the plan, and their dependencies on its tasks, are not the
// plan's to change. known holds the ids of the boxes that had an item
// before createItems, cur their items as the sync leaves them; a
// dependency read here is added to cur.
func followDeps(b *queues.Broker, plan string, first int, tasks []*Task, ids []string, known map[int]string, cur map[string]*queues.Item, rep *Report) error {
	rel := Path(plan)
	var errs []error
	item := func(id string) (*queues.Item, error) {
		if it := cur[id]; it != nil {
			return it, nil
		}
		it, err := b.Get(id)
		if err == nil {
			cur[id] = it
		}
		return it, err
	}
	event := func(typ string, d Dependency, it *queues.Item) {
		data := map[string]any{"title": d.Title, "dependency": d.On, "dependency_title": d.OnTitle}
		if d.Reason != "" {
			data["reason"] = d.Reason
		}
		_, _ = b.Journal().Append(journal.Event{Type: typ, Kind: "plan", Path: rel, Item: d.Item, Queue: it.Queue, Data: data})
	}
	// The items of the plan's pending boxes, with what their box waits for.
	type waiting struct {
		t    *Task
		id   string
		want []string // the items the plan says it waits for
	}
	var items []waiting
	for _, t := range tasks {
		id := known[t.Index]
		it := cur[id]
		if id == "" || it == nil {
			continue // no item, or one made by this sync (waits as the plan says)
		}
		if it.State != queues.Pending {
			// A new box under a box whose item is under way or over:
			// that item will not wait for it.
			for _, k := range t.Kids {
				if ids[k] != "" && known[k] == "" && t.Open() {
					rep.Notes = append(rep.Notes, fmt.Sprintf("line %d %q: the item of the box it is under (%s) is %s and will not wait for it", first+tasks[k].Line, tasks[k].Title, id, it.State))
				}
			}
			continue
		}
		w := waiting{t: t, id: id}
		for _, dt := range deps(tasks, t) {
			if dep := ids[dt.Index]; dep != "" {
				w.want = append(w.want, dep)
			}
		}
		items = append(items, w)
	}
	for _, w := range items {
		it := cur[w.id]
		for _, dep := range it.DependsOn {
			d, err := item(dep)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if d.Plan != plan || d.State == queues.Done {
				continue
			}
			reason := ""
			switch {
			case d.State == queues.Dead && d.Cancelled:
				reason = "cancelled"
			case w.t.Open() && !slices.Contains(w.want, dep):
				reason = "moved"
			default:
				continue
			}
			nit, err := b.RemoveDependency(w.id, dep)
			if errors.Is(err, queues.ErrState) {
				break // claimed since it was read: nothing holds it back now
			}
			if err != nil {
				errs = append(errs, err)
				break
			}
			it, cur[w.id] = nit, nit
			x := Dependency{Item: w.id, Title: w.t.Title, On: dep, OnTitle: d.Title, Reason: reason}
			rep.DepsDropped = append(rep.DepsDropped, x)
			event(EventDependencyDropped, x, it)
		}
	}
	for _, w := range items {
		it, t := cur[w.id], w.t
		if !t.Open() || it.State != queues.Pending {
			continue
		}
		for _, dt := range deps(tasks, t) {
			dep := ids[dt.Index]
			if dep == "" || dt.Cancelled() || slices.Contains(it.DependsOn, dep) {
				continue
			}
			if known[dt.Index] != "" { // not made by this sync: is it still to do?
				d := cur[dep]
				if d == nil || d.State == queues.Done || d.State == queues.Dead && d.Cancelled {
					continue
				}
			}
			nit, err := b.AddDependency(w.id, dep)
			if errors.Is(err, queues.ErrState) {
				break
			}
			if err != nil {
				rep.Notes = append(rep.Notes, fmt.Sprintf("line %d %q: %v", first+t.Line, t.Title, err))
				continue
			}
			it, cur[w.id] = nit, nit
			x := Dependency{Item: w.id, Title: t.Title, On: dep, OnTitle: dt.Title}
			rep.DepsAdded = append(rep.DepsAdded, x)
			event(EventDependencyAdded, x, it)
		}
	}
	return errors.Join(errs...)
}

// orphans finds the plan's items that its tasks: map m does not name,
// by title: pending and claimed ones, done ones too with withDone (to
// take over; done/ grows without bound, so only then). Only files that
// mention the plan's name are parsed. complete is false when a directory
// could not be read whole: an orphan may be missing.
func orphans(b *queues.Broker, plan, queue string, m map[string]string, withDone bool) (out map[string][]string, complete bool) {
	out = map[string][]string{}
	complete = true
	seen := map[string]bool{} // a crash's copy in two directories is one item
	states := []string{queues.Pending, queues.Claimed}
	if withDone {
		states = append(states, queues.Done)
	}
	for _, st := range states {
		docs, errs := b.Store().Grep("queues/"+queue+"/"+st, plan)
		for _, e := range errs {
			// A file that does not parse is check's to report; one that
			// cannot be read leaves the scan incomplete.
			var pe *docstore.ParseError
			if !errors.As(e, &pe) {
				complete = false
			}
		}
		for _, d := range docs {
			id := strings.TrimSuffix(path.Base(d.Path), ".md")
			if _, named := m[id]; named || seen[id] || d.String("plan") != plan {
				continue
			}
			seen[id] = true
			out[d.String("title")] = append(out[d.String("title")], id)
		}
	}
	return out, complete
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// SyncItem syncs the plan an item comes from (nothing if it has none):
// called after an item changes state, so its box follows.
func SyncItem(b *queues.Broker, id string) (*Report, error) {
	it, err := b.Get(id)
	if err != nil || it.Plan == "" {
		return nil, err
	}
	return Sync(b, it.Plan, SyncOptions{})
}

// SyncAll syncs every plan (of queue, if not empty). A plan file it
// cannot read (frontmatter broken by a hand edit) is in the error, not
// skipped: its queue is unknown, so it is said whatever the queue, and the
// other plans are synced all the same.
func SyncAll(b *queues.Broker, queue string) ([]*Report, error) {
	docs, errs := b.Store().List(schema.Plan)
	var out []*Report
	for _, d := range docs {
		if queue != "" && d.String("queue") != queue {
			continue
		}
		r, err := Sync(b, d.Name, SyncOptions{})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, r)
	}
	for i, err := range errs {
		errs[i] = handMade(err)
	}
	return out, errors.Join(errs...)
}
