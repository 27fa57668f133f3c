package messages

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues/gitsync"
	"github.com/tavernhq/tavern/schema"
)

// MarkLate is run by the git sync after a round wrote other machines'
// chunks and bookmarks into the store (gitsync.Options.AfterApply). A
// message that came in with an id at or below a reader's bookmark was
// never shown to that reader here: it was sent on another machine before
// the newest message the reader read, and reached this store only now.
// Recv would pass over it for good, so it is added to the reader's late
// list (the bookmark's `late` field), which Recv and Inbox count as
// unread until it is read.
//
// The bookmark is taken as it was before the round. A bookmark that came
// in with the round was advanced on another machine that had these
// messages already (a machine pushes its messages with, or before, any
// bookmark that read them), so its reader has seen them there.
//
// A reader that reads one channel on two machines may be shown such a
// message on both. A crash between the round's writes and this marking
// loses the marks of that round (the messages stay in their chunks:
// `recv --all` shows them).
func MarkLate(s *docstore.Store, docs []gitsync.Applied) error {
	arrived := map[string][]Message{} // channel -> messages new to this store
	prior := map[string][]byte{}      // bookmark path -> its content before the round (nil: absent)
	for _, a := range docs {
		k, caps, err := schema.KindOfPath(a.Path)
		if err != nil {
			continue
		}
		switch k {
		case schema.Chunk:
			msgs := newMessages(a.Path, a.Before, a.After)
			if ch := caps["channel"]; ch != "" && len(msgs) > 0 {
				arrived[ch] = append(arrived[ch], msgs...)
			}
		case schema.Bookmark:
			prior[a.Path] = a.Before
		}
	}
	if len(arrived) == 0 {
		return nil
	}
	ents, err := os.ReadDir(filepath.Join(s.Root(), "bookmarks"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(name, ".md") || strings.HasPrefix(name, ".") {
			continue
		}
		rel := "bookmarks/" + name
		var was *docstore.Doc
		if b, ok := prior[rel]; ok {
			if b == nil {
				continue // new with the round: read elsewhere
			}
			if was, err = docstore.Parse(rel, b); err != nil {
				continue // a broken copy read nothing here
			}
		} else if was, err = s.Get(rel); err != nil {
			errs = append(errs, err)
			continue
		}
		marks := bookmarkMap(was)
		reader := strings.TrimSuffix(name, ".md")
		add := map[string][]string{}
		for ch, msgs := range arrived {
			if mark := marks[ch]; mark != "" {
				for _, m := range msgs {
					// The reader's own (sent as it on the other machine)
					// was never unread for it.
					if m.ID <= mark && !fromReader(m, reader) {
						add[ch] = append(add[ch], m.ID)
					}
				}
			}
		}
		if len(add) == 0 {
			continue
		}
		if _, err := s.Update(rel, func(d *docstore.Doc) error {
			if err := checkBookmarks(d); err != nil {
				return err
			}
			late := lateMap(d)
			for ch, ids := range add {
				late[ch] = union(late[ch], ids)
			}
			if err := setLate(d, late); err != nil {
				return err
			}
			return d.Set("updated", time.Now())
		}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// newMessages returns the messages of chunk after that before lacks (a
// chunk that does not parse: none).
func newMessages(path string, before, after []byte) []Message {
	if after == nil {
		return nil
	}
	da, err := docstore.Parse(path, after)
	if err != nil {
		return nil
	}
	ma, err := chunkMessages(da)
	if err != nil {
		return nil
	}
	had := map[string]bool{}
	if before != nil {
		if db, err := docstore.Parse(path, before); err == nil {
			if mb, err := chunkMessages(db); err == nil {
				for _, m := range mb {
					had[m.ID] = true
				}
			}
		}
	}
	var out []Message
	for _, m := range ma {
		if !had[m.ID] {
			out = append(out, m)
		}
	}
	return out
}

// union is a ∪ b, sorted, without repeats.
func union(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range [][]string{a, b} {
		for _, id := range l {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	sort.Strings(out)
	return out
}
