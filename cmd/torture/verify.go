package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/watcher/journal"
)

// torn counts the documents of a store that do not parse (a torn or
// half-written file): every .md file outside engine-private directories
// and the journal, except those skip says to leave out.
func torn(dir string, skip func(rel string) bool) (n int, first string) {
	root := filepath.Join(dir, ".tavern")
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || rel == "events") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(rel, ".md") || (skip != nil && skip(rel)) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err == nil {
			_, err = docstore.Parse(rel, data)
		}
		if err != nil {
			n++
			if first == "" {
				first = err.Error()
			}
		}
		return nil
	})
	return n, first
}

// itemStates maps every item id of queue to the state directories that
// hold it.
func itemStates(dir, queue string) map[string][]string {
	out := map[string][]string{}
	for _, st := range []string{queues.Pending, queues.Claimed, queues.Done, queues.Dead} {
		ents, _ := os.ReadDir(filepath.Join(dir, ".tavern", "queues", queue, st))
		for _, e := range ents {
			if id, ok := strings.CutSuffix(e.Name(), ".md"); ok {
				out[id] = append(out[id], st)
			}
		}
	}
	return out
}

// completions counts item.completed events per item id.
func completions(dir string) map[string]int {
	out := map[string]int{}
	journal.Read(filepath.Join(dir, ".tavern"), journal.Filter{Types: []string{queues.EventCompleted}}, func(e journal.Event, err error) bool {
		if err == nil {
			out[e.Item]++
		}
		return true
	})
	return out
}

// twiceCompleted counts the items completed more than once.
func twiceCompleted(dir string) int {
	n := 0
	for _, c := range completions(dir) {
		if c > 1 {
			n++
		}
	}
	return n
}

// claims counts item.claimed events.
func claims(dir string) int {
	n := 0
	journal.Read(filepath.Join(dir, ".tavern"), journal.Filter{Types: []string{queues.EventClaimed}}, func(e journal.Event, err error) bool {
		if err == nil {
			n++
		}
		return true
	})
	return n
}
