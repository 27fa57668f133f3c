package plans_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/plans"
)

func TestParse(t *testing.T) {
	body := "# Release 2\r\n" +
		"\r\n" +
		"- [ ] Ship it (after: Docs)\r\n" +
		"  Cut the tag and push.\r\n" +
		"\r\n" +
		"      make release\r\n" +
		"  - [ ] Build\r\n" +
		"    * [x] Vendor deps\r\n" +
		"    * [ ] Compile (gate: human)\r\n" +
		"  - [ ] Test\r\n" +
		"1. [ ] Docs\r\n" +
		"2. [-] Blog post\r\n" +
		"- [x] ~~Old idea~~\r\n" +
		"```\r\n" +
		"- [ ] not a task (in a fence)\r\n" +
		"```\r\n" +
		"- [ ] Test\r\n"
	tasks, err := plans.Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		title, key string
		state      byte
		parent     int
		kids       int
	}
	want := []row{
		{"Ship it", "Ship it", ' ', -1, 2},
		{"Build", "Build", ' ', 0, 2},
		{"Vendor deps", "Vendor deps", 'x', 1, 0},
		{"Compile", "Compile", ' ', 1, 0},
		{"Test", "Test", ' ', 0, 0},
		{"Docs", "Docs", ' ', -1, 0},
		{"Blog post", "Blog post", '-', -1, 0},
		{"Old idea", "Old idea", 'x', -1, 0},
		{"Test", "Test (2)", ' ', -1, 0},
	}
	if len(tasks) != len(want) {
		t.Fatalf("got %d tasks, want %d", len(tasks), len(want))
	}
	for i, w := range want {
		g := tasks[i]
		if g.Title != w.title || g.Key != w.key || g.State != w.state || g.Parent != w.parent || len(g.Kids) != w.kids {
			t.Errorf("task %d = %q key %q state %q parent %d kids %d, want %+v", i, g.Title, g.Key, g.State, g.Parent, len(g.Kids), w)
		}
		if body[g.Offset] != g.State && !(g.State == 'x' && body[g.Offset] == 'X') {
			t.Errorf("task %d: offset %d holds %q, not its state", i, g.Offset, body[g.Offset])
		}
	}
	if got, want := tasks[0].Body, "Cut the tag and push.\n\n    make release\n"; got != want {
		t.Errorf("body of the first task = %q, want %q", got, want)
	}
	if !slices.Equal(tasks[0].After, []string{"Docs"}) || tasks[3].Gate != "human" {
		t.Errorf("markers: after %q, gate %q", tasks[0].After, tasks[3].Gate)
	}
	if !tasks[6].Cancelled() || !tasks[7].Cancelled() || tasks[7].Checked() || !tasks[2].Checked() {
		t.Errorf("[-] and struck-through ticked boxes must read as cancelled")
	}
}

type env struct {
	t *testing.T
	s *docstore.Store
	b *queues.Broker
}

func newEnv(t *testing.T) *env {
	t.Helper()
	s, _, err := docstore.Init(filepath.Join(t.TempDir(), ".tavern"), "p")
	if err != nil {
		t.Fatal(err)
	}
	b, err := queues.Open(s, queues.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if _, err := b.CreateQueue("work", queues.QueueOptions{}); err != nil {
		t.Fatal(err)
	}
	return &env{t, s, b}
}

func (e *env) read(name string) string {
	e.t.Helper()
	data, err := os.ReadFile(filepath.Join(e.s.Root(), plans.Path(name)))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(data)
}

func (e *env) write(name, data string) {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.s.Root(), plans.Path(name)), []byte(data), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// byTitle maps item titles of the queue to items (every state).
func (e *env) byTitle() map[string]*queues.Item {
	e.t.Helper()
	out := map[string]*queues.Item{}
	for _, st := range []string{"pending", "claimed", "done", "dead"} {
		ents, _ := os.ReadDir(filepath.Join(e.s.Root(), "queues/work", st))
		for _, en := range ents {
			it, err := e.b.Get(strings.TrimSuffix(en.Name(), ".md"))
			if err != nil {
				e.t.Fatal(err)
			}
			out[it.Title] = it
		}
	}
	return out
}

const plan = `# Launch

- [ ] Release (after: Announce)
  Tag and publish.
  - [ ] Build
  - [x] Vendor
  - [ ] Test
- [ ] Announce
- [ ] Approve launch (gate: human)
`

func TestImportMakesItemsInDependencyOrder(t *testing.T) {
	e := newEnv(t)
	rep, err := plans.Import(e.b, plans.ImportOptions{Name: "launch", Queue: "work", Source: "launch.md", Data: []byte(plan)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Added) != 5 {
		t.Fatalf("added %d items, want 5 (every unchecked box)", len(rep.Added))
	}
	its := e.byTitle()
	rel, build, test, ann, appr := its["Release"], its["Build"], its["Test"], its["Announce"], its["Approve launch"]
	if rel == nil || build == nil || test == nil || ann == nil || appr == nil || its["Vendor"] != nil {
		t.Fatalf("items: %v", its)
	}
	if got := rel.DependsOn; !slices.Contains(got, build.ID) || !slices.Contains(got, test.ID) || !slices.Contains(got, ann.ID) || len(got) != 3 {
		t.Errorf("Release depends on %v, want Build, Test (children) and Announce (after)", got)
	}
	if appr.Gate != "human" || rel.Plan != "launch" {
		t.Errorf("gate %q plan %q", appr.Gate, rel.Plan)
	}
	if got := string(rel.Doc.Body()); !strings.Contains(got, "Tag and publish.") {
		t.Errorf("Release body %q lacks the text under its box", got)
	}
	doc := e.read("launch")
	if !strings.HasSuffix(doc, "\n---\n"+plan) && !strings.HasSuffix(doc, "---\n"+plan) {
		t.Fatalf("the plan body is not the checklist byte for byte:\n%s", doc)
	}
	// Children are claimable first; the parent waits for them.
	c, err := e.b.Take(context.Background(), queues.TakeOptions{Queues: []string{"work"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.ID == rel.ID {
		t.Fatal("the parent was claimable before its children were done")
	}
}

func TestSyncTicksABoxAsAOneLineChange(t *testing.T) {
	e := newEnv(t)
	if _, err := plans.Import(e.b, plans.ImportOptions{Name: "launch", Queue: "work", Data: []byte(plan)}); err != nil {
		t.Fatal(err)
	}
	before := e.read("launch")
	ann := e.byTitle()["Announce"]
	c, err := e.b.Take(context.Background(), queues.TakeOptions{Queues: []string{"work"}})
	for err == nil && c.ID != ann.ID {
		c.Release()
		_, err = e.b.Resolve(c.ID, queues.ResolveOptions{}) // not this one: finish it by hand, take again
		c, err = e.b.Take(context.Background(), queues.TakeOptions{Queues: []string{"work"}})
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete("announced"); err != nil {
		t.Fatal(err)
	}
	before = e.read("launch") // the by-hand resolutions above do not change the file
	rep, err := plans.SyncItem(e.b, ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rep.Ticked, ann.ID) {
		t.Fatalf("sync ticked %v, want %s among them", rep.Ticked, ann.ID)
	}
	after := e.read("launch")
	diff := lineDiff(before, after)
	if len(diff) != len(rep.Ticked) {
		t.Fatalf("the file changed on %d lines for %d ticks:\n%s", len(diff), len(rep.Ticked), strings.Join(diff, "\n"))
	}
	for _, d := range diff {
		if !strings.Contains(d, "- [ ] ") || !strings.Contains(d, "- [x] ") {
			t.Fatalf("a changed line is not a tick: %s", d)
		}
	}
	// Idempotent.
	if rep, err := plans.Sync(e.b, "launch", plans.SyncOptions{}); err != nil || rep.Changed() {
		t.Fatalf("second sync: %v %+v", err, rep)
	}
	if e.read("launch") != after {
		t.Fatal("a sync with nothing to do rewrote the file")
	}
}

// lineDiff lists "old -> new" for each line that differs (same number of
// lines expected).
func lineDiff(a, b string) []string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			out = append(out, x+" -> "+y)
		}
	}
	return out
}

func TestSyncFollowsHandEdits(t *testing.T) {
	e := newEnv(t)
	if _, err := plans.Import(e.b, plans.ImportOptions{Name: "launch", Queue: "work", Data: []byte(plan)}); err != nil {
		t.Fatal(err)
	}
	its := e.byTitle()
	// Claim Build, so hand edits of it conflict.
	var held *queues.Claim
	for {
		c, err := e.b.Take(context.Background(), queues.TakeOptions{Queues: []string{"work"}})
		if err != nil {
			t.Fatal(err)
		}
		if c.ID == its["Build"].ID {
			held = c
			break
		}
		defer c.Release()
	}
	doc := e.read("launch")
	doc = strings.Replace(doc, "- [ ] Test\n", "- [x] Test\n", 1)                                                 // ticked by hand: completes
	doc = strings.Replace(doc, "- [ ] Announce\n", "- [-] Announce\n", 1)                                         // cancels
	doc = strings.Replace(doc, "  - [ ] Build\n", "  - [x] Build\n", 1)                                           // ticked while claimed: conflict
	doc = strings.Replace(doc, "- [ ] Approve launch (gate: human)\n", "- [x] Approve launch (gate: human)\n", 1) // gated: conflict
	doc = strings.Replace(doc, "  - [x] Vendor\n", "  - [x] Vendor\n  - [ ] Sign binaries\n", 1)                  // new, under Release
	doc += "- [ ] Celebrate\n"
	e.write("launch", doc)
	rep, err := plans.Sync(e.b, "launch", plans.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := e.byTitle()
	if st := now["Test"].State; st != queues.Done {
		t.Errorf("Test ticked by hand is %s, want done", st)
	}
	if a := now["Announce"]; a.State != queues.Dead || !a.Cancelled {
		t.Errorf("Announce [-] is %s (cancelled %v), want dead and cancelled", a.State, a.Cancelled)
	}
	if st := now["Build"].State; st != queues.Claimed {
		t.Errorf("Build ticked while claimed is %s, want still claimed", st)
	}
	if st := now["Approve launch"].State; st != queues.Pending {
		t.Errorf("a gated item ticked by hand is %s, want pending", st)
	}
	if len(rep.Conflicts) != 2 {
		t.Fatalf("conflicts %v, want Build (claimed) and Approve launch (gate)", rep.Conflicts)
	}
	sign, cel := now["Sign binaries"], now["Celebrate"]
	if sign == nil || cel == nil {
		t.Fatalf("new boxes did not become items: %v", rep)
	}
	if rel := now["Release"]; !slices.Contains(rel.DependsOn, sign.ID) {
		t.Errorf("Release depends on %v; the new nested box %s is missing", rel.DependsOn, sign.ID)
	}
	// The journal says which changes were hand edits.
	if n := countEvents(t, e.s, `"type":"external"`, `"kind":"plan"`); n != 2 {
		t.Errorf("%d external plan events, want 2 (ticked, cancelled)", n)
	}
	// Removing a pending box cancels its item; removing the claimed one
	// is a conflict.
	doc = e.read("launch")
	doc = strings.Replace(doc, "- [ ] Celebrate\n", "", 1)
	doc = strings.Replace(doc, "  - [x] Build\n", "", 1)
	e.write("launch", doc)
	rep, err = plans.Sync(e.b, "launch", plans.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := e.byTitle()["Celebrate"]; c.State != queues.Dead || !c.Cancelled {
		t.Errorf("removed box: item %s (cancelled %v)", c.State, c.Cancelled)
	}
	found := false
	for _, c := range rep.Conflicts {
		found = found || c.Item == held.ID
	}
	if !found {
		t.Errorf("removing the box of a claimed item was not reported: %v", rep.Conflicts)
	}
	if _, err := held.Complete("built"); err != nil {
		t.Fatal(err)
	}
}

func countEvents(t *testing.T, s *docstore.Store, subs ...string) int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(s.Root(), "events", "*.jsonl"))
	n := 0
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
	line:
		for sc.Scan() {
			for _, s := range subs {
				if !strings.Contains(sc.Text(), s) {
					continue line
				}
			}
			n++
		}
		fh.Close()
	}
	return n
}

func TestImportRefusesBadPlans(t *testing.T) {
	cases := []struct {
		name, plan, want string
	}{
		{"unknown after", "- [ ] A\n- [ ] B (after: Nothing)\n", "launch.md:2: (after: Nothing) names no task"},
		{"cycle", "- [ ] A (after: B)\n- [ ] B (after: A)\n", "dependency cycle"},
		{"ambiguous after", "- [ ] Write a\n- [ ] Write b\n- [ ] C (after: Write)\n", "launch.md:3: (after: Write) matches the tasks on lines 1, 2"},
		{"bad gate", "- [ ] A (gate: robot)\n", "launch.md:1: gate \"robot\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			_, err := plans.Import(e.b, plans.ImportOptions{Name: "launch", Queue: "work", Source: "launch.md", Data: []byte(tc.plan)})
			if !errors.Is(err, plans.ErrPlan) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an ErrPlan containing %q", err, tc.want)
			}
			if len(e.byTitle()) != 0 {
				t.Fatal("a refused import made items")
			}
			if _, err := os.Stat(filepath.Join(e.s.Root(), plans.Path("launch"))); !os.IsNotExist(err) {
				t.Fatal("a refused import wrote the plan")
			}
		})
	}
	e := newEnv(t)
	if _, err := plans.Import(e.b, plans.ImportOptions{Name: "p", Queue: "nope", Data: []byte("- [ ] a\n")}); !errors.Is(err, queues.ErrUnknownQueue) {
		t.Fatalf("unknown queue: %v", err)
	}
}

func TestSyncAdoptsItemsOfACrashedImport(t *testing.T) {
	e := newEnv(t)
	if _, err := plans.Import(e.b, plans.ImportOptions{Name: "launch", Queue: "work", Data: []byte(plan)}); err != nil {
		t.Fatal(err)
	}
	// Forget the map, as if the import died before writing it.
	doc := e.read("launch")
	i := strings.Index(doc, "tasks:")
	j := strings.Index(doc[i:], "\n---\n")
	e.write("launch", doc[:i]+doc[i+j+1:])
	rep, err := plans.Sync(e.b, "launch", plans.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Added) != 0 || len(rep.Adopted) != 5 {
		t.Fatalf("added %d adopted %d, want 0 and 5", len(rep.Added), len(rep.Adopted))
	}
	if n := len(e.byTitle()); n != 5 {
		t.Fatalf("%d items after the sync, want 5", n)
	}
}

// An orphan (an item of the plan its map lost) is taken over by a box of
// its title whatever the box's mark, and acted on as that box says; an
// orphan no box takes is cancelled. Before, only open boxes took orphans
// over: the others stayed pending for ever.
func TestSyncAdoptsOrphansWhateverTheirBox(t *testing.T) {
	e := newEnv(t)
	if _, err := plans.Import(e.b, plans.ImportOptions{Name: "launch", Queue: "work", Data: []byte(plan)}); err != nil {
		t.Fatal(err)
	}
	// The map lost (a crashed import), and the boxes edited by hand
	// before the next sync: one ticked, one cancelled, one removed.
	doc := e.read("launch")
	i := strings.Index(doc, "tasks:")
	j := strings.Index(doc[i:], "\n---\n")
	doc = doc[:i] + doc[i+j+1:]
	doc = strings.Replace(doc, "- [ ] Announce\n", "- [x] Announce\n", 1)
	doc = strings.Replace(doc, "  - [ ] Test\n", "  - [-] Test\n", 1)
	doc = strings.Replace(doc, "- [ ] Approve launch (gate: human)\n", "", 1)
	e.write("launch", doc)
	rep, err := plans.Sync(e.b, "launch", plans.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	its := e.byTitle()
	if len(rep.Added) != 0 || len(rep.Adopted) != 4 {
		t.Errorf("added %d adopted %d, want 0 and 4 (every box of an item)", len(rep.Added), len(rep.Adopted))
	}
	if want := []string{its["Announce"].ID}; !slices.Equal(rep.Completed, want) {
		t.Errorf("completed %v, want Announce's %v", rep.Completed, want)
	}
	cancelled := []string{its["Test"].ID, its["Approve launch"].ID}
	slices.Sort(cancelled)
	slices.Sort(rep.Cancelled)
	if !slices.Equal(rep.Cancelled, cancelled) {
		t.Errorf("cancelled %v, want Test's and Approve launch's %v", rep.Cancelled, cancelled)
	}
	for title, state := range map[string]string{"Release": queues.Pending, "Build": queues.Pending, "Announce": queues.Done, "Test": queues.Dead, "Approve launch": queues.Dead} {
		if got := its[title].State; got != state {
			t.Errorf("%s is %s, want %s", title, got, state)
		}
	}
	if rep, err := plans.Sync(e.b, "launch", plans.SyncOptions{}); err != nil || rep.Changed() {
		t.Errorf("second sync: %v %+v, want nothing to do", err, rep)
	}
}

// Orphans are looked for only when the plan's file changed since the last
// sync that looked (or a box lacks an item): a sync of an untouched plan,
// as every pool tick makes, does not read the queue's directories. An
// item that claims the plan without any edit of it (here added through
// the API) is therefore seen at the next edit of the file, not before.
func TestSyncLooksForOrphansWhenTheFileChanged(t *testing.T) {
	e := newEnv(t)
	if _, err := plans.Import(e.b, plans.ImportOptions{Name: "p", Queue: "work", Data: []byte("- [ ] A\n- [ ] B\n")}); err != nil {
		t.Fatal(err)
	}
	if _, err := plans.Sync(e.b, "p", plans.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	stray, err := e.b.Add("work", queues.AddOptions{Title: "C", Plan: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := plans.Sync(e.b, "p", plans.SyncOptions{}); err != nil || rep.Changed() {
		t.Fatalf("sync of an untouched plan: %v %+v, want nothing done", err, rep)
	}
	e.write("p", e.read("p")+"\n")
	rep, err := plans.Sync(e.b, "p", plans.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Cancelled, []string{stray.ID}) {
		t.Fatalf("cancelled %v after an edit, want the stray item %s", rep.Cancelled, stray.ID)
	}
}

// A conflict is journaled once while it persists: every sync, status and
// pool tick sees it again, and the journal would repeat it each time. The
// status counts a box by the state it lists (claimed), not by its mark.
func TestConflictJournaledOnce(t *testing.T) {
	e := newEnv(t)
	if _, err := plans.Import(e.b, plans.ImportOptions{Name: "p", Queue: "work", Data: []byte("- [ ] A\n- [ ] B\n- [x] C\n")}); err != nil {
		t.Fatal(err)
	}
	c, err := e.b.Take(context.Background(), queues.TakeOptions{Queues: []string{"work"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	e.write("p", strings.Replace(e.read("p"), "- [ ] A\n", "- [x] A\n", 1))
	for range 3 {
		rep, err := plans.Sync(e.b, "p", plans.SyncOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Conflicts) != 1 || rep.Conflicts[0].Item != c.ID {
			t.Fatalf("conflicts %v, want A's (every sync reports it)", rep.Conflicts)
		}
	}
	for range 2 {
		st, err := plans.GetStatus(e.b, "p", true)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Tasks[0].State; got != queues.Claimed {
			t.Fatalf("A is listed %s, want claimed", got)
		}
		if st.Done != 1 || st.Claimed != 1 || st.Pending != 1 || st.Total != 3 {
			t.Errorf("totals done %d claimed %d pending %d of %d, want 1, 1, 1 of 3 (as listed)", st.Done, st.Claimed, st.Pending, st.Total)
		}
	}
	if got, want := countEvents(t, e.s, `"type":"plan.conflict"`), 1; got != want {
		t.Errorf("%d plan.conflict events after 5 syncs of one conflict, want %d", got, want)
	}
	if got, want := countEvents(t, e.s, `"type":"plan.synced"`), 1; got != want {
		t.Errorf("%d plan.synced events, want %d (only the sync that found the conflict)", got, want)
	}

	// Resolved (released: the ticked box completes A), then a new one
	// (B ticked while claimed): journaled.
	if _, err := c.Release(); err != nil {
		t.Fatal(err)
	}
	if rep, err := plans.Sync(e.b, "p", plans.SyncOptions{}); err != nil || len(rep.Conflicts) != 0 || len(rep.Completed) != 1 {
		t.Fatalf("sync after release: %v, %v; want A completed, no conflict", rep, err)
	}
	c2, err := e.b.Take(context.Background(), queues.TakeOptions{Queues: []string{"work"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Release()
	e.write("p", strings.Replace(e.read("p"), "- [ ] B\n", "- [x] B\n", 1))
	for range 2 {
		if _, err := plans.Sync(e.b, "p", plans.SyncOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := countEvents(t, e.s, `"type":"plan.conflict"`), 2; got != want {
		t.Errorf("%d plan.conflict events, want %d (A once, B once)", got, want)
	}
}

// A cancelled box is not waited for by the items of its own plan, and
// only those: another plan's item made to wait for it by hand keeps
// waiting. A box marked [-] while its item is claimed is a conflict, not
// a cancellation: the plan keeps waiting for it, and syncs that see the
// conflict again change no dependency back and forth.
func TestSyncDropsOnlyItsOwnDependenciesOnCancelledTasks(t *testing.T) {
	e := newEnv(t)
	if _, err := plans.Import(e.b, plans.ImportOptions{Name: "launch", Queue: "work", Data: []byte(plan)}); err != nil {
		t.Fatal(err)
	}
	if _, err := plans.Import(e.b, plans.ImportOptions{Name: "later", Queue: "work", Data: []byte("- [ ] Follow up\n")}); err != nil {
		t.Fatal(err)
	}
	its := e.byTitle()
	release, build, test, follow := its["Release"], its["Build"], its["Test"], its["Follow up"]
	if _, err := e.b.AddDependency(follow.ID, test.ID); err != nil {
		t.Fatal(err)
	}
	c, err := e.b.Take(context.Background(), queues.TakeOptions{Queues: []string{"work"}})
	if err != nil || c.ID != build.ID {
		t.Fatalf("take: %v, want Build (%s) claimed", err, build.ID)
	}
	defer c.Release()
	doc := strings.Replace(e.read("launch"), "  - [ ] Build\n", "  - [-] Build\n", 1)
	e.write("launch", strings.Replace(doc, "  - [ ] Test\n", "  - [-] Test\n", 1))
	rep, err := plans.Sync(e.b, "launch", plans.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []plans.Dependency{{Item: release.ID, Title: "Release", On: test.ID, OnTitle: "Test", Reason: "cancelled"}}
	if !slices.Equal(rep.DepsDropped, want) || len(rep.DepsAdded) != 0 || len(rep.Conflicts) != 1 {
		t.Fatalf("dropped %+v added %+v conflicts %v; want Release no longer waiting for Test, a conflict for Build", rep.DepsDropped, rep.DepsAdded, rep.Conflicts)
	}
	if got := e.byTitle()["Release"].DependsOn; !slices.Contains(got, build.ID) || slices.Contains(got, test.ID) {
		t.Errorf("Release depends on %v: want Build's %s (claimed, not cancelled), not Test's %s", got, build.ID, test.ID)
	}
	for _, name := range []string{"launch", "later", "launch"} {
		rep, err := plans.Sync(e.b, name, plans.SyncOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.DepsDropped)+len(rep.DepsAdded) != 0 {
			t.Errorf("sync of %s again: dropped %+v added %+v, want neither", name, rep.DepsDropped, rep.DepsAdded)
		}
	}
	if got := e.byTitle()["Follow up"].DependsOn; !slices.Equal(got, []string{test.ID}) {
		t.Errorf("Follow up (plan later) depends on %v, want Test's %s still: not launch's to change", got, test.ID)
	}
	if got, want := countEvents(t, e.s, `"type":"plan.dependency_dropped"`), 1; got != want {
		t.Errorf("%d plan.dependency_dropped events, want %d", got, want)
	}
}

// A plan file is imported once per store: the same file under another
// name (by its path from the project root, an absolute one, or a link) is
// refused, naming the plan, and nothing is made. source: is the file
// relative to the project root.
func TestImportOncePerFile(t *testing.T) {
	e := newEnv(t)
	root := filepath.Dir(e.s.Root())
	if err := os.MkdirAll(filepath.Join(root, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "docs", "todo.md")
	if err := os.WriteFile(file, []byte("- [ ] A\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, filepath.Join(root, "todo-link.md")); err != nil {
		t.Fatal(err)
	}
	if _, err := plans.Import(e.b, plans.ImportOptions{Name: "todo", Queue: "work", Source: "todo.md", File: file, Data: []byte("- [ ] A\n")}); err != nil {
		t.Fatal(err)
	}
	d, err := e.s.Get(plans.Path("todo"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.String("source"), "docs/todo.md"; got != want {
		t.Fatalf("source: %q, want %q", got, want)
	}
	for name, opt := range map[string]plans.ImportOptions{
		"root-relative": {Source: "docs/todo.md"},
		"absolute":      {Source: "x.md", File: file},
		"link":          {Source: "todo-link.md", File: filepath.Join(root, "todo-link.md")},
	} {
		opt.Name, opt.Queue, opt.Data = "other", "work", []byte("- [ ] A\n")
		_, err := plans.Import(e.b, opt)
		var ie *plans.ImportedError
		if !errors.As(err, &ie) || ie.Plan != "todo" || !errors.Is(err, plans.ErrExists) {
			t.Fatalf("%s: import of the imported file: %v, want an ImportedError naming todo", name, err)
		}
		if _, err := e.s.Get(plans.Path("other")); err == nil {
			t.Fatalf("%s: a refused import wrote plans/other.md", name)
		}
	}
	if n := len(e.byTitle()); n != 1 {
		t.Fatalf("%d items, want 1", n)
	}
}
