package watcher

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tavernhq/tavern/docstore"
)

// TestFieldIndexFollowsChanges: equality queries of a watching projection
// (answered from field indexes) give what a scan of the files gives, after
// creates, edits, removals, invalid documents and list values.
func TestFieldIndexFollowsChanges(t *testing.T) {
	s := newStore(t)
	const n = indexMinEntries + 100
	doc := func(i int, state, extra string) string {
		return fmt.Sprintf("---\nname: a%d\nstate: %s\nspawns: %d\n%s---\n", i, state, i%7, extra)
	}
	for i := range n {
		state := "idle"
		if i%10 == 0 {
			state = "working"
		}
		writeDoc(t, s, fmt.Sprintf("agents/a%d.md", i), doc(i, state, ""))
	}
	p := openProj(t, s, Options{Watch: true})
	queries := [][]string{{"state=working"}, {"state=idle", "spawns=3"}, {"spawns=3"}, {"tags=x"}, {"state=working", "spawns!=0"}, {"state="}}
	check := func(stage string) {
		t.Helper()
		if err := p.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		scan := openProj(t, s, Options{})
		for _, q := range queries {
			var conds []docstore.Cond
			for _, w := range q {
				c, err := docstore.ParseWhere(w)
				if err != nil {
					t.Fatal(err)
				}
				conds = append(conds, c)
			}
			// With Unparsed, the files that do not parse besides: the
			// index keeps them aside, as a scan finds them.
			for _, unparsed := range []bool{false, true} {
				names := func(p *Projection) (out []string, broken int) {
					es, err := p.Query(Query{Kind: "agents", Where: conds, Unparsed: unparsed})
					if err != nil {
						t.Fatal(err)
					}
					for _, e := range es {
						out = append(out, e.Path+" "+e.Rev)
						if !e.Parsed() {
							broken++
						}
					}
					return out, broken
				}
				got, gotBroken := names(p)
				want, wantBroken := names(scan)
				if !slices.Equal(got, want) {
					t.Errorf("%s: %v (unparsed %v): the watching projection lists %d documents, a scan %d\n got %v\nwant %v", stage, q, unparsed, len(got), len(want), got, want)
				}
				if gotBroken != wantBroken || unparsed != (gotBroken > 0) && stage != "first" {
					t.Errorf("%s: %v (unparsed %v): %d files that do not parse listed, a scan %d", stage, q, unparsed, gotBroken, wantBroken)
				}
			}
		}
		scan.Close()
	}
	check("first")
	if len(p.indexes) == 0 {
		t.Fatal("no index was built")
	}
	for i := 0; i < n; i += 13 {
		switch i % 5 {
		case 0:
			writeDoc(t, s, fmt.Sprintf("agents/a%d.md", i), doc(i, "working", ""))
		case 1:
			writeDocAtomic(t, s, fmt.Sprintf("agents/a%d.md", i), doc(i, "idle", "tags: [x, y]\n"))
		case 2:
			if err := os.Remove(filepath.Join(s.Root(), "agents", fmt.Sprintf("a%d.md", i))); err != nil {
				t.Fatal(err)
			}
		case 3:
			writeDoc(t, s, fmt.Sprintf("agents/a%d.md", i), "---\nname: [broken\n---\n")
		case 4:
			writeDoc(t, s, fmt.Sprintf("agents/a%d.md", i), doc(i, "", "tags: [[x], {y: z}]\n"))
		}
	}
	for i := n; i < n+50; i++ {
		writeDoc(t, s, fmt.Sprintf("agents/a%d.md", i), doc(i, "working", "tags: x\n"))
	}
	check("after changes")
}
