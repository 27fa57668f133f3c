package watcher

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tavernhq/tavern/watcher/journal"
)

// Projection scripts (testdata/projection/*.txt) use the same operations
// as the filesystem scripts, on a fresh store, and expect the projection's
// events: "created agents/a.md", "updated agents/a.md [state]",
// "invalid agents/a.md 2:1", "removed agents/a.md".
func TestProjectionScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/projection/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, file := range files {
		s := parseScript(t, file)
		for _, mode := range []string{"fsnotify", "poll"} {
			if s.only != "" && s.only != mode {
				continue
			}
			t.Run(strings.TrimSuffix(s.name, ".txt")+"/"+mode, func(t *testing.T) {
				t.Parallel()
				store := newStore(t)
				root := store.Root()
				for _, op := range s.setup {
					doOp(t, nil, root, op)
				}
				opt := Options{Watch: true, Reconcile: -1, Poll: -1, Debounce: time.Hour}
				if mode == "poll" {
					opt.Poll = time.Hour
				}
				p := openProj(t, store, opt)
				sub := p.Subscribe(journal.Filter{}, 1024)
				var got []string
				for _, op := range s.ops {
					noSync := op[0] == "~"
					if noSync {
						op = op[1:]
					}
					doOp(t, p.fw, root, op)
					if !noSync && op[0] != "peek" {
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						if err := p.Sync(ctx); err != nil {
							t.Fatalf("after %q: Sync: %v", op, err)
						}
						cancel()
					}
				drain:
					for {
						select {
						case e := <-sub.C:
							got = append(got, describeEvent(e))
						default:
							break drain
						}
					}
				}
				// A last Sync: what is still settling is decided now.
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := p.Sync(ctx); err != nil {
					t.Fatalf("final Sync: %v", err)
				}
				cancel()
				for len(sub.C) > 0 {
					got = append(got, describeEvent(<-sub.C))
				}
				if strings.Join(got, "\n") != strings.Join(s.output, "\n") {
					t.Errorf("events:\ngot:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(s.output, "\n\t"))
				}
				closeWriters(t, root)
				assertSameEntries(t, mustQuery(t, p), freshEntries(t, store))
			})
		}
	}
}

func mustQuery(tb testing.TB, p *Projection) []Entry {
	tb.Helper()
	es, err := p.Query(Query{})
	if err != nil {
		tb.Fatal(err)
	}
	return es
}

func describeEvent(e journal.Event) string {
	verb := strings.TrimPrefix(e.Type, "doc.")
	switch e.Type {
	case journal.TypeCreated, journal.TypeRemoved:
		return verb + " " + e.Path
	case journal.TypeUpdated:
		return fmt.Sprintf("%s %s %v", verb, e.Path, e.Data["changed"])
	case journal.TypeInvalid:
		return fmt.Sprintf("%s %s %v:%v", verb, e.Path, e.Data["line"], e.Data["col"])
	}
	return e.Type + " " + e.Path
}
