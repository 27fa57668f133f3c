package messages

import (
	"bytes"
	"sort"
	"strings"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues/gitsync"
)

// MergeChunk is the git sync's merge of a message chunk both machines
// appended to (gitsync.Options.Mergers["chunk"]): the union of both
// sides' messages by id, in id (time) order, with first_id, last_id,
// first_time, last_time, message_count and updated recomputed. A message
// present on both sides with different text (a hand edit on one) keeps
// ours and journals theirs. Text before the first message (a title a
// person added) is ours. base is not needed: messages are never removed
// by the engine, and a union cannot lose one.
func MergeChunk(path string, base, ours, theirs []byte) ([]byte, []gitsync.Loss, error) {
	do, dt, err := parseSides(path, ours, theirs)
	if err != nil {
		return nil, nil, err
	}
	mo, err := ParseChunkBody(do.Body())
	if err != nil {
		return nil, nil, err
	}
	mt, err := ParseChunkBody(dt.Body())
	if err != nil {
		return nil, nil, err
	}
	byID := map[string]Message{}
	var losses []gitsync.Loss
	for _, m := range mo {
		byID[m.ID] = m
	}
	for _, m := range mt {
		if o, ok := byID[m.ID]; ok {
			if o.Text != m.Text || o.Sender != m.Sender {
				losses = append(losses, gitsync.Loss{Path: path, Field: "message " + m.ID, Kept: o.Text, Lost: m.Text,
					Rule: "a message edited on both machines: this machine's text is kept"})
			}
			continue
		}
		byID[m.ID] = m
	}
	all := make([]Message, 0, len(byID))
	for _, m := range byID {
		all = append(all, m)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	var buf bytes.Buffer
	buf.Write(prelude(do.Body()))
	for _, m := range all {
		renderMessage(&buf, m)
	}
	st := stateOf(all)
	res := do.Clone()
	res.SetBody(buf.Bytes())
	if err := res.SetMany([]docstore.Field{
		{Key: "first_id", Value: st.firstID},
		{Key: "first_time", Value: st.firstTime},
		{Key: "last_id", Value: st.lastID},
		{Key: "last_time", Value: st.lastTime},
		{Key: "message_count", Value: st.count},
		{Key: "updated", Value: st.lastTime},
	}); err != nil {
		return nil, nil, err
	}
	return res.Bytes(), losses, nil
}

// prelude is the body before the first message header.
func prelude(body []byte) []byte {
	s := string(body)
	if strings.HasPrefix(s, headerPrefix) {
		return nil
	}
	if i := strings.Index(s, "\n"+headerPrefix); i >= 0 {
		return body[:i+1]
	}
	return body
}

// MergeBookmark is the git sync's merge of a bookmark document both
// machines changed (gitsync.Options.Mergers["bookmark"]): per channel the
// greater message id. A bookmark only advances (Recv moves it past what
// it returned) and ids are time-ordered, so the greater id is the truth
// of both sides: the per-field rule kept one side's whole `channels` map
// and the other machine's reads came back as unread. Both sides'
// channels are kept, and their late lists (mergeLate); the other fields
// are ours, with the earlier id and created (a reader that first read on
// two machines created the document twice; every machine picks the same)
// and the later updated. Nothing is
// dropped, so nothing is journaled.
func MergeBookmark(path string, base, ours, theirs []byte) ([]byte, []gitsync.Loss, error) {
	do, dt, err := parseSides(path, ours, theirs)
	if err != nil {
		return nil, nil, err
	}
	marks := bookmarkMap(do)
	for ch, id := range bookmarkMap(dt) {
		if id > marks[ch] {
			marks[ch] = id
		}
	}
	res := do.Clone()
	fields := []docstore.Field{{Key: "channels", Value: marks}}
	if late := mergeLate(path, base, do, dt); len(late) > 0 {
		fields = append(fields, docstore.Field{Key: "late", Value: late})
	} else if res.Has("late") {
		if err := res.Delete("late"); err != nil {
			return nil, nil, err
		}
	}
	if id := dt.String("id"); id != "" && (do.String("id") == "" || id < do.String("id")) {
		fields = append(fields, docstore.Field{Key: "id", Value: id})
	}
	for _, k := range []struct {
		key     string
		earlier bool
	}{{"created", true}, {"updated", false}} {
		to, okO := do.Time(k.key)
		tt, okT := dt.Time(k.key)
		if okT && (!okO || tt.Before(to) == k.earlier && !tt.Equal(to)) {
			fields = append(fields, docstore.Field{Key: k.key, Value: tt})
		}
	}
	if err := res.SetMany(fields); err != nil {
		return nil, nil, err
	}
	return res.Bytes(), nil, nil
}

// mergeLate merges two bookmarks' late lists (MarkLate) against their
// base: a late id either side read (in base, gone from that side) is
// gone; one either side marked is kept.
func mergeLate(path string, base []byte, do, dt *docstore.Doc) map[string][]string {
	var lb map[string][]string
	if base != nil {
		if db, err := docstore.Parse(path, base); err == nil {
			lb = lateMap(db)
		}
	}
	lo, lt := lateMap(do), lateMap(dt)
	out := map[string][]string{}
	for _, side := range []map[string][]string{lo, lt} {
		for ch, ids := range side {
			for _, id := range ids {
				if inList(lb[ch], id) && (!inList(lo[ch], id) || !inList(lt[ch], id)) {
					continue // read on one side
				}
				out[ch] = union(out[ch], []string{id})
			}
		}
	}
	return out
}

func inList(l []string, id string) bool {
	for _, x := range l {
		if x == id {
			return true
		}
	}
	return false
}

// parseSides parses both sides of a merge of the document at path.
func parseSides(path string, ours, theirs []byte) (do, dt *docstore.Doc, err error) {
	if do, err = docstore.Parse(path, ours); err != nil {
		return nil, nil, err
	}
	if dt, err = docstore.Parse(path, theirs); err != nil {
		return nil, nil, err
	}
	return do, dt, nil
}
