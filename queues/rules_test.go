package queues_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

func readRaw(tb testing.TB, s *docstore.Store, rel string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(s.Root(), rel))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// An item's id, queue and priority are its path's: a write through the
// store that changes one is refused, naming the field, and nothing is
// written; other changes go through, even on an item a hand edit left off.
func TestItemPathFieldsRule(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	it := mustAdd(t, b, "q", queues.AddOptions{Title: "a", Priority: 3})
	if !strings.HasPrefix(it.ID, "p03-") || it.Priority != 3 {
		t.Fatalf("add --priority 3: id %s priority %d", it.ID, it.Priority)
	}
	for _, c := range []struct {
		field string
		value any
		want  string
	}{
		{"id", "zzz", "file name"},
		{"queue", "other", "directory"},
		{"priority", 99, "queue add --priority"},
	} {
		before := readRaw(t, s, it.Path)
		_, err := s.Update(it.Path, func(d *docstore.Doc) error { return d.Set(c.field, c.value) })
		var pe *queues.PathFieldError
		if !errors.Is(err, docstore.ErrRefused) || !errors.Is(err, queues.ErrPathField) || !errors.As(err, &pe) {
			t.Fatalf("set %s: got %v, want a refused *PathFieldError", c.field, err)
		}
		if pe.Field != c.field || pe.Path != it.Path || pe.Line == 0 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("set %s: error %+v (%q)", c.field, pe, err)
		}
		if got := readRaw(t, s, it.Path); !bytes.Equal(got, before) {
			t.Errorf("set %s: the file changed:\n%s", c.field, got)
		}
	}
	// The same values are no change; other fields may change.
	if _, err := s.Update(it.Path, func(d *docstore.Doc) error {
		return d.SetMany([]docstore.Field{{Key: "priority", Value: 3}, {Key: "queue", Value: "q"}, {Key: "title", Value: "b"}})
	}); err != nil {
		t.Fatalf("set to the path's values: %v", err)
	}
	// A hand edit made the queue disagree: check reports it with its
	// position, and it does not block a change of another field.
	handEdit(t, s, it.Path, func(d *docstore.Doc) error { return d.Set("queue", "elsewhere") })
	queues.InstallChecks(s)
	rep, err := s.Check([]string{it.Path}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || !errors.Is(rep.Problems[0].Err, queues.ErrPathField) {
		t.Fatalf("check: %+v, want the queue field", rep.Problems)
	}
	if p := rep.Problems[0]; p.Path != it.Path || p.Line != 4 || p.Col != 8 {
		t.Errorf("check: %s:%d:%d, want %s:4:8", p.Path, p.Line, p.Col, it.Path)
	}
	if _, err := s.Update(it.Path, func(d *docstore.Doc) error { return d.Set("title", "c") }); err != nil {
		t.Errorf("set title of a hand-edited item: %v", err)
	}
	// The claim cycle is not a ruled write.
	c := mustTake(t, b, take1("q"))
	if c.Item.ID != it.ID {
		t.Fatalf("took %s, want %s", c.Item.ID, it.ID)
	}
}

// A write may not close a dependency cycle (Add refuses one too).
func TestDependencyCycleRule(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	a := mustAdd(t, b, "q", queues.AddOptions{Title: "a"})
	m := mustAdd(t, b, "q", queues.AddOptions{Title: "m", DependsOn: []string{a.ID}})
	z := mustAdd(t, b, "q", queues.AddOptions{Title: "z", DependsOn: []string{m.ID}})
	for _, deps := range [][]string{{z.ID}, {m.ID}, {a.ID}} {
		before := readRaw(t, s, a.Path)
		_, err := s.Update(a.Path, func(d *docstore.Doc) error { return d.Set("depends_on", deps) })
		if !errors.Is(err, docstore.ErrRefused) || !errors.Is(err, queues.ErrCycle) {
			t.Fatalf("depends_on %v: got %v, want a refused ErrCycle", deps, err)
		}
		if !strings.HasPrefix(err.Error(), a.Path+":") || !strings.Contains(err.Error(), a.ID+" -> ") {
			t.Errorf("depends_on %v: error %q does not say where and which cycle", deps, err)
		}
		if got := readRaw(t, s, a.Path); !bytes.Equal(got, before) {
			t.Errorf("depends_on %v: the file changed", deps)
		}
	}
	// No cycle: allowed.
	other := mustAdd(t, b, "q", queues.AddOptions{Title: "other"})
	if _, err := s.Update(z.Path, func(d *docstore.Doc) error { return d.Set("depends_on", []string{m.ID, other.ID}) }); err != nil {
		t.Errorf("an acyclic dependency: %v", err)
	}
}

// A default_lease in tavern.md that the schema refuses fails a queue
// create that would use it, at its line; it is not replaced by 5m.
func TestBadDefaultLease(t *testing.T) {
	for _, v := range []string{"-5m", "0s"} {
		s := newStore(t, true)
		b := newBroker(t, s, nil)
		handEdit(t, s, docstore.ConfigFile, func(d *docstore.Doc) error { return d.Set("default_lease", v) })
		_, err := b.CreateQueue("q", queues.QueueOptions{})
		var fe *schema.FieldError
		if !errors.Is(err, schema.ErrInvalid) || !errors.As(err, &fe) || fe.Field != "default_lease" || fe.Path != docstore.ConfigFile || fe.Line == 0 {
			t.Fatalf("default_lease %s: create: %v, want the tavern.md field error", v, err)
		}
		if _, err := os.Stat(filepath.Join(s.Root(), queues.QueuePath("q"))); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("default_lease %s: the queue was created", v)
		}
		if _, err := queues.DefaultLease(s); !errors.Is(err, schema.ErrInvalid) {
			t.Errorf("default_lease %s: DefaultLease: %v", v, err)
		}
		// An explicit lease does not need the default.
		if _, err := b.CreateQueue("r", queues.QueueOptions{Lease: 1e9}); err != nil {
			t.Errorf("default_lease %s: create --lease 1s: %v", v, err)
		}
	}
}

// New queues get plain names (schema.ValidPlainName).
func TestCreateQueueName(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	for _, name := range []string{"Bad Q", "UPPER", "-x"} {
		if _, err := b.CreateQueue(name, queues.QueueOptions{}); !errors.Is(err, schema.ErrInvalidName) {
			t.Errorf("create %q: got %v, want ErrInvalidName", name, err)
		}
	}
}

// TestDanglingDependencyRule: a write that adds a dependency on no item
// is refused at its line (ErrBadDependency, as Add refuses it); one whose
// dependency went away since still moves through its states.
func TestDanglingDependencyRule(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	a := mustAdd(t, b, "q", queues.AddOptions{Title: "a"})
	before := readRaw(t, s, a.Path)
	_, err := s.Update(a.Path, func(d *docstore.Doc) error { return d.Set("depends_on", []string{"p00-nosuch"}) })
	var de *queues.DependencyError
	if !errors.Is(err, queues.ErrBadDependency) || !errors.As(err, &de) || de.Dep != "p00-nosuch" || de.Line == 0 {
		t.Fatalf("depends_on a missing item: got %v, want a DependencyError at its line", err)
	}
	if got := readRaw(t, s, a.Path); !bytes.Equal(got, before) {
		t.Error("the file changed")
	}
	// A dependency done and then removed does not stop its dependent.
	mustQueue(t, b, "r", queues.QueueOptions{})
	dep := mustAdd(t, b, "r", queues.AddOptions{Title: "dep"})
	z := mustAdd(t, b, "r", queues.AddOptions{Title: "z", DependsOn: []string{dep.ID}})
	c, err := b.Take(context.Background(), queues.TakeOptions{Queues: []string{"r"}, As: "w"})
	if err != nil || c.Item.ID != dep.ID {
		t.Fatalf("take the dependency: %v %+v", err, c)
	}
	if _, err := c.Complete("ok"); err != nil {
		t.Fatal(err)
	}
	c, err = b.Take(context.Background(), queues.TakeOptions{Queues: []string{"r"}, As: "w"})
	if err != nil || c.Item.ID != z.ID {
		t.Fatalf("take the dependent: %v %+v", err, c)
	}
	gone, err := b.Get(dep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(gone.Path); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete("ok"); err != nil {
		t.Errorf("complete an item whose dependency was removed: %v", err)
	}
}

// A gate's id is its file name, by which its item and approvals name it:
// a write through the store that changes or removes it is refused with
// an *IDError (ErrIDChanged) and leaves the file as it was. An id a hand
// edit made disagree with the file name may be given the file name's.
func TestIDFixedRule(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	it := mustAdd(t, b, "q", queues.AddOptions{Title: "a"})
	g, err := b.AddGate(it.ID, queues.GateOptions{Reason: "ok?"})
	if err != nil {
		t.Fatal(err)
	}
	before := readRaw(t, s, g.Path)
	for name, edit := range map[string]func(*docstore.Doc) error{
		"set":   func(d *docstore.Doc) error { return d.Set("id", docstore.NewID()) },
		"unset": func(d *docstore.Doc) error { return d.Delete("id") },
	} {
		_, err := s.Update(g.Path, edit)
		var ie *queues.IDError
		if !errors.As(err, &ie) || !errors.Is(err, queues.ErrIDChanged) || !errors.Is(err, docstore.ErrRefused) || ie.Was != g.ID || ie.Line != 3 {
			t.Errorf("%s id: got %v (%+v), want refused with ErrIDChanged at line 3", name, err, ie)
		}
	}
	if got := readRaw(t, s, g.Path); !bytes.Equal(got, before) {
		t.Errorf("refused writes changed the file:\n%s\nwant\n%s", got, before)
	}
	if _, err := s.Update(g.Path, func(d *docstore.Doc) error { return d.Set("reason", "ok now?") }); err != nil {
		t.Fatalf("a write that leaves the id alone: %v", err)
	}

	// A hand edit (a copied file) left it another id: the fix is allowed,
	// another id still is not.
	handEdit(t, s, g.Path, func(d *docstore.Doc) error { return d.Set("id", "copied") })
	if _, err := s.Update(g.Path, func(d *docstore.Doc) error { return d.Set("id", "other") }); !errors.Is(err, queues.ErrIDChanged) {
		t.Errorf("set id=other on a copied id: got %v, want ErrIDChanged", err)
	}
	if _, err := s.Update(g.Path, func(d *docstore.Doc) error { return d.Set("id", g.ID) }); err != nil {
		t.Errorf("set the file name's id: %v", err)
	}
}

// An item's id is fixed as the others': a change is refused as a path
// field (ErrPathField) and matches ErrIDChanged too; a removal is refused
// with an *IDError.
func TestItemIDFixed(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	it := mustAdd(t, b, "q", queues.AddOptions{Title: "a"})
	before := readRaw(t, s, it.Path)
	_, err := s.Update(it.Path, func(d *docstore.Doc) error { return d.Set("id", "other") })
	if !errors.Is(err, queues.ErrPathField) || !errors.Is(err, queues.ErrIDChanged) {
		t.Errorf("set id: got %v, want ErrPathField and ErrIDChanged", err)
	}
	_, err = s.Update(it.Path, func(d *docstore.Doc) error { return d.Delete("id") })
	var ie *queues.IDError
	if !errors.As(err, &ie) || !errors.Is(err, docstore.ErrRefused) || ie.Was != it.ID || ie.Kind != "item" {
		t.Errorf("unset id: got %v, want a refused *IDError", err)
	}
	if got := readRaw(t, s, it.Path); !bytes.Equal(got, before) {
		t.Errorf("refused writes changed the file:\n%s\nwant\n%s", got, before)
	}
}
