package docstore

import (
	"testing"
	"time"
)

// Every write path stamps `updated` (where the kind has it) unless the
// writer set it: Update only bumped it when the caller did, so `tavern set`
// and `tavern edit` left the time of an earlier change, and sync, which
// takes the later `updated` as the last writer of a field two machines
// changed, could keep the older value.
func TestWritesStampUpdated(t *testing.T) {
	s := initStore(t)
	const old = "2020-01-02T03:04:05Z"
	doc := "---\nschema_version: 1\nid: a\nname: a\nstate: idle\ncreated: " + old + "\nupdated: " + old + "\n---\n"
	updated := func(rel string) string {
		t.Helper()
		d, err := s.Get(rel)
		if err != nil {
			t.Fatal(err)
		}
		return d.String("updated")
	}
	fresh := func(what, got string, since time.Time) {
		t.Helper()
		at, err := time.Parse(time.RFC3339Nano, got)
		if err != nil || at.Before(since.Truncate(time.Millisecond)) {
			t.Errorf("%s: updated %q, want the time of the write (after %s)", what, got, since.Format(time.RFC3339Nano))
		}
	}

	writeFile(t, s, "agents/a.md", doc)
	start := time.Now()
	if _, err := s.Update("agents/a.md", func(d *Doc) error { return d.Set("model", "x") }); err != nil {
		t.Fatal(err)
	}
	fresh("Update", updated("agents/a.md"), start)

	// The writer's own value stands: a new one, a removal, or with
	// KeepUpdated the one it had.
	writeFile(t, s, "agents/a.md", doc)
	if _, err := s.Update("agents/a.md", func(d *Doc) error { return d.Set("updated", "2021-01-01T00:00:00Z") }); err != nil {
		t.Fatal(err)
	}
	if got, want := updated("agents/a.md"), "2021-01-01T00:00:00Z"; got != want {
		t.Errorf("Update setting updated: %q, want %q", got, want)
	}
	if _, err := s.Update("agents/a.md", func(d *Doc) error { return d.Delete("updated") }); err != nil {
		t.Fatal(err)
	}
	if d, _ := s.Get("agents/a.md"); d.Has("updated") {
		t.Errorf("Update removing updated: it is back, %q", d.String("updated"))
	}
	writeFile(t, s, "agents/a.md", doc)
	if _, err := s.UpdateWith("agents/a.md", UpdateOptions{KeepUpdated: true}, func(d *Doc) error {
		if err := d.Set("model", "y"); err != nil {
			return err
		}
		return d.Set("updated", old)
	}); err != nil {
		t.Fatal(err)
	}
	if got := updated("agents/a.md"); got != old {
		t.Errorf("UpdateWith KeepUpdated: updated %q, want %q", got, old)
	}

	// A write that changes nothing writes nothing, so stamps nothing.
	writeFile(t, s, "agents/a.md", doc)
	if _, err := s.Update("agents/a.md", func(d *Doc) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := updated("agents/a.md"); got != old {
		t.Errorf("an update that changed nothing: updated %q, want %q", got, old)
	}

	// A hand edit (tavern edit, the UIs), unless the person changed it.
	writeFile(t, s, "agents/a.md", doc)
	start = time.Now()
	if _, err := s.SaveEdit("agents/a.md", "", []byte(doc[:len(doc)-4]+"model: z\n---\n")); err != nil {
		t.Fatal(err)
	}
	fresh("SaveEdit", updated("agents/a.md"), start)
	edited := "---\nschema_version: 1\nid: a\nname: a\nstate: idle\ncreated: " + old + "\nupdated: 2022-01-01T00:00:00Z\n---\n"
	if _, err := s.SaveEdit("agents/a.md", "", []byte(edited)); err != nil {
		t.Fatal(err)
	}
	if got, want := updated("agents/a.md"), "2022-01-01T00:00:00Z"; got != want {
		t.Errorf("SaveEdit changing updated: %q, want %q", got, want)
	}

	// A move.
	writeFile(t, s, "agents/a.md", doc)
	l, err := s.Lock(DocLockKey("agents/a.md"))
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	_, err = s.Move(l, "agents/a.md", "agents/b.md", func(d *Doc) error { return d.Set("name", "b") })
	l.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	fresh("Move", updated("agents/b.md"), start)

	// A document without one (written by hand) is not given one.
	writeFile(t, s, "agents/c.md", "---\nschema_version: 1\nid: c\nname: c\nstate: idle\n---\n")
	if _, err := s.Update("agents/c.md", func(d *Doc) error { return d.Set("model", "x") }); err != nil {
		t.Fatal(err)
	}
	if d, _ := s.Get("agents/c.md"); d.Has("updated") {
		t.Errorf("a document without updated got one: %q", d.String("updated"))
	}

	// A kind without the field (the configuration) does not get one.
	if _, err := s.Update("tavern.md", func(d *Doc) error { return d.Set("name", "p") }); err != nil {
		t.Fatal(err)
	}
	if d, _ := s.Get("tavern.md"); d.Has("updated") {
		t.Errorf("tavern.md got updated: %q", d.String("updated"))
	}
}
