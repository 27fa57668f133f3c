package gitsync

import (
	"testing"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// A field-by-field merge of two valid edits can make an invalid
// document: here tavern.md, where one machine removed the etcd login and
// the other changed its username, merges into a username without
// password_env, which every command refuses (exit 5 on every machine,
// tavern sync included). The merge then keeps the last writer's whole
// document, valid, and journals the other. Before, the sides were parsed
// without their kind, so every merged document "failed" validation alike
// and the fallback never ran.
func TestMergeKeepsDocumentValid(t *testing.T) {
	const p = docstore.ConfigFile
	doc := func(etcd string) []byte {
		return []byte("---\nschema_version: 1\nname: p\ncoordination: etcd\n" + etcd + "---\n")
	}
	base := doc("etcd:\n  endpoints: [127.0.0.1:2379]\n  username: u\n  password_env: P\n")
	// alpha (ours) removes the login; beta (theirs: tavern.md has no
	// updated, so the greater machine name is the last writer) changes
	// the username.
	ours := doc("etcd:\n  endpoints: [127.0.0.1:2379]\n")
	theirs := doc("etcd:\n  endpoints: [127.0.0.1:2379]\n  username: u2\n  password_env: P\n")
	for _, valid := range [][]byte{base, ours, theirs} {
		if errs := validated(t, p, valid); len(errs) > 0 {
			t.Fatalf("a side is invalid: %v\n%s", errs, valid)
		}
	}
	got, losses := mergeDoc(p, base, ours, theirs, "alpha", "beta")
	if errs := validated(t, p, got); len(errs) > 0 {
		t.Errorf("merged tavern.md is invalid: %v\n%s", errs, got)
	}
	if len(losses) == 0 {
		t.Errorf("nothing journaled for the side not kept:\n%s", got)
	}
}

func validated(t *testing.T, p string, data []byte) []*schema.FieldError {
	t.Helper()
	d, err := docstore.Parse(p, data)
	if err != nil {
		t.Fatalf("%s does not parse: %v\n%s", p, err, data)
	}
	d.Kind, d.Name, _ = schema.NameOfPath(p)
	return d.Validate(false)
}

// A key one side removed is said as "(absent)" in the conflict record,
// not as the merge's internal placeholder (a NUL byte, "\u0000" in
// `log --json`).
func TestLossSaysAbsent(t *testing.T) {
	const p = "agents/ann.md"
	doc := func(extra string) []byte {
		return []byte("---\nschema_version: 1\nname: ann\n" + extra + "---\n")
	}
	_, losses := mergeDoc(p, doc("note: a\n"), doc(""), doc("note: b\n"), "alpha", "beta")
	if len(losses) != 1 {
		t.Fatalf("losses: %+v", losses)
	}
	if got := losses[0]; got.Kept != "b" || got.Lost != absent {
		t.Errorf("loss kept %q lost %q, want %q and %q", got.Kept, got.Lost, "b", absent)
	}
}
