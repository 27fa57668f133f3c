package trace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Snapshot is a document as it was at a past time.
type Snapshot struct {
	Ref     string           `json:"ref"`
	At      schema.Timestamp `json:"at"`
	Exists  bool             `json:"exists"`
	Path    string           `json:"path,omitempty"` // where it was
	Rev     string           `json:"rev,omitempty"`  // its revision then, from the journal
	Since   schema.Timestamp `json:"since,omitzero"` // when it took that revision
	Content string           `json:"content,omitempty"`
	// Source says where Content comes from: "current file" (unchanged
	// since), "trash copy", "git <commit>", or "" when it is not known.
	Source string `json:"source,omitempty"`
	// Item is the item's state then (items only), replayed from the
	// journal.
	Item *ItemState `json:"item,omitempty"`
	// Before are the events up to At; After the changes since, with the
	// fields each changed.
	Before []Entry `json:"before,omitempty"`
	After  []Entry `json:"after,omitempty"`
	Note   string  `json:"note,omitempty"`
}

// ItemState is an item's state at a time, from its events.
type ItemState struct {
	State    string `json:"state"`
	Holder   string `json:"holder,omitempty"`
	Attempt  int    `json:"attempt,omitempty"`
	Attempts int    `json:"attempts"`
	Error    string `json:"last_error,omitempty"`
}

// At shows the document ref (KIND/NAME, items/ID, or a path inside the
// store) as it was at time at: where it was and its revision, from the
// journal; its content when some copy of that revision survives — the
// current file if it has not changed since, a .trash/ copy, or the git
// history of the store when .tavern/ is in a git repository (the commit
// before at, checked against the revision when the journal has one);
// for items, the state replayed from the item's events.
func At(b *queues.Broker, ref string, at time.Time) (*Snapshot, error) {
	s := b.Store()
	snap := &Snapshot{Ref: ref, At: schema.TimeOf(at)}
	kind, name, id, cands, err := candidates(b, ref)
	if err != nil {
		return nil, err
	}
	var evs []journal.Event
	_, err = journal.Read(s.Root(), journal.Filter{}, func(e journal.Event, err error) bool {
		if err != nil {
			return true
		}
		// An item's file events (doc.removed by rm) carry no item id: its
		// path, in whichever queue and state, names it.
		if (id != "" && ((e.Item == id && e.Kind == "item") || strings.HasSuffix(e.Path, "/"+id+".md"))) || cands[e.Path] {
			evs = append(evs, e)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	// Items found only in the journal (since removed): their paths.
	for _, e := range evs {
		if id != "" && e.Path != "" {
			cands[e.Path] = true
		}
	}
	var last *journal.Event
	for i := range evs {
		e := evs[i]
		ent := Entry{Time: e.Time, Kind: "event", Type: e.Type, Actor: e.Agent, Summary: summarize(e), Ref: e.Path, Data: e.Data}
		if e.Time.After(at) {
			snap.After = append(snap.After, ent)
			continue
		}
		snap.Before = append(snap.Before, ent)
		last = &evs[i]
		if e.Rev != "" {
			snap.Rev, snap.Since = e.Rev, e.Time
		}
		if removal(e) {
			snap.Rev = ""
		}
	}
	if last != nil {
		snap.Exists = !removal(*last)
		snap.Path = last.Path
	}
	if kind == schema.Item {
		snap.Item = replayItem(evs, at)
		if snap.Item.State == "" {
			snap.Item = nil
		}
	}
	// The content of that revision, from whatever copy has it.
	paths := make([]string, 0, len(cands))
	for p := range cands {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	if snap.Rev != "" {
		for _, p := range paths {
			if data, err := s.ReadFile(p); err == nil && docstore.Revision(data) == snap.Rev {
				snap.Content, snap.Source = string(data), "current file ("+p+", unchanged since)"
				break
			}
		}
		if snap.Source == "" {
			for _, p := range paths {
				if data, where := fromTrash(s, p, snap.Rev); data != nil {
					snap.Content, snap.Source = string(data), "trash copy ("+where+")"
					break
				}
			}
		}
	}
	if snap.Source == "" {
		if data, commit, p := fromGit(s.Root(), paths, at, snap.Rev); data != nil {
			snap.Content, snap.Source = string(data), "git "+commit+" ("+p+")"
			if !snap.Exists {
				snap.Exists, snap.Path = true, p
			}
		}
	}
	switch {
	case !snap.Exists && last == nil && snap.Source == "":
		// No path at all (an item id that no file and no event has) is
		// unknown, as a name of another kind that names nothing is.
		if _, err := s.ReadFile(firstOf(paths)); (err == nil && len(paths) > 0) || len(snap.After) > 0 {
			snap.Note = fmt.Sprintf("no record of %s at or before %s: it was created later (or by a hand edit the journal did not see)", name, schema.FormatTime(at))
		} else {
			return nil, fmt.Errorf("%s: %w%s", ref, ErrUnknown, nearHint(s, kind, name))
		}
	case snap.Exists && snap.Source == "":
		var changed []string
		for _, e := range snap.After {
			if c, ok := e.Data["changed"]; ok {
				changed = append(changed, fmt.Sprint(c))
			}
		}
		snap.Note = "the content of revision " + snap.Rev + " is not kept (the journal records revisions and the names of changed fields, not values; no git history has it)"
		if len(changed) > 0 {
			snap.Note += "; changed since: " + strings.Join(changed, " ")
		}
	}
	return snap, nil
}

// candidates resolves ref to the paths the document may have had: one
// for most kinds; for an item, its path in every state of its queue.
func candidates(b *queues.Broker, ref string) (kind *schema.Kind, name, id string, paths map[string]bool, err error) {
	s := b.Store()
	paths = map[string]bool{}
	ref = strings.TrimPrefix(filepath.ToSlash(ref), "./")
	if strings.HasSuffix(ref, ".md") {
		k, n, err := schema.NameOfPath(ref)
		if err != nil {
			return nil, "", "", nil, err
		}
		kind, name = k, n
		if k != schema.Item {
			paths[ref] = true
			return kind, name, "", paths, nil
		}
		name = ref[strings.LastIndexByte(ref, '/')+1 : len(ref)-3]
	} else {
		kn, n, ok := strings.Cut(ref, "/")
		if !ok {
			return nil, "", "", nil, fmt.Errorf("%w: %q: want KIND/NAME or a path", schema.ErrUnknownKind, ref)
		}
		k, err := schema.Lookup(kn)
		if err != nil {
			return nil, "", "", nil, err
		}
		kind, name = k, n
		if k != schema.Item {
			p, err := k.Path(n, nil)
			if err != nil {
				return nil, "", "", nil, err
			}
			paths[p] = true
			return kind, name, "", paths, nil
		}
	}
	id = name
	if err := schema.ValidName(id); err != nil {
		return nil, "", "", nil, err
	}
	// A unique prefix names its item, as trace ITEM takes it; an id that
	// names no item now may still be in the journal (removed since).
	if full, err := b.ResolveID(id); err == nil {
		id, name = full, full
	} else if errors.Is(err, docstore.ErrAmbiguous) {
		return nil, "", "", nil, err
	}
	if it, err := b.Get(id); err == nil {
		for _, st := range schema.ItemStates {
			paths[queues.ItemPath(it.Queue, st, id)] = true
		}
	}
	_ = s
	return kind, name, id, paths, nil
}

// removal reports whether e removed its document: the engine's removal,
// or one made by hand, journaled as external with its operation.
func removal(e journal.Event) bool {
	if e.Type == journal.TypeExternal {
		op, _ := e.Data["op"].(string)
		return op == journal.TypeRemoved
	}
	return e.Type == journal.TypeRemoved
}

func firstOf(ps []string) string {
	if len(ps) == 0 {
		return ""
	}
	return ps[0]
}

// replayItem folds an item's events up to at into its state.
func replayItem(evs []journal.Event, at time.Time) *ItemState {
	st := &ItemState{}
	for _, e := range evs {
		if e.Time.After(at) || e.Kind != "item" {
			continue
		}
		n := intOf(e.Data["attempt"])
		switch e.Type {
		case queues.EventAdded:
			st.State = queues.Pending
		case queues.EventClaimed:
			st.State, st.Holder, st.Attempt = queues.Claimed, e.Agent, n
			st.Attempts++
		case queues.EventCompleted:
			st.State, st.Holder = queues.Done, ""
		case queues.EventFailed:
			st.State, st.Holder, st.Error = queues.Pending, "", firstLine(str(e.Data["error"]))
		case queues.EventDead:
			st.State, st.Holder = queues.Dead, ""
			if r := str(e.Data["reason"]); r != "" {
				st.Error = firstLine(r)
			}
		case queues.EventReleased:
			st.State, st.Holder = queues.Pending, ""
			st.Attempts--
		case queues.EventReaped:
			st.State, st.Holder = queues.Pending, ""
			if strings.Contains(e.Path, "/dead/") {
				st.State = queues.Dead
			}
		case queues.EventRetried:
			st.State, st.Attempts = queues.Pending, 0
		case queues.EventCancelled:
			st.State = queues.Dead
		}
	}
	return st
}

// fromTrash finds a .trash/ copy of rel with revision rev.
func fromTrash(s *docstore.Store, rel, rev string) ([]byte, string) {
	pat := filepath.Join(s.Root(), ".trash", "*-"+strings.ReplaceAll(rel, "/", "__"))
	files, _ := filepath.Glob(pat)
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil && docstore.Revision(data) == rev {
			return data, filepath.Base(f)
		}
	}
	return nil, ""
}

// fromGit finds, in the git history of the store's repository, the last
// commit at or before at that has one of paths, and returns that copy
// (only one with revision rev, when rev is known).
func fromGit(root string, paths []string, at time.Time, rev string) ([]byte, string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gitc := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "LC_ALL=C", "GIT_TERMINAL_PROMPT=0")
		var out bytes.Buffer
		cmd.Stdout = &out
		err := cmd.Run()
		return out.Bytes(), err
	}
	top, err := gitc("rev-parse", "--show-toplevel")
	if err != nil {
		return nil, "", ""
	}
	prefix, err := filepath.Rel(strings.TrimSpace(string(top)), root)
	if err != nil {
		return nil, "", ""
	}
	for _, p := range paths {
		full := filepath.ToSlash(filepath.Join(prefix, p))
		out, err := gitc("log", "-1", "--format=%H", "--before="+at.UTC().Format(time.RFC3339), "--", ":(top)"+full)
		commit := strings.TrimSpace(string(out))
		if err != nil || commit == "" {
			continue
		}
		data, err := gitc("show", commit+":"+full)
		if err != nil {
			continue // deleted in that commit
		}
		if rev != "" && docstore.Revision(data) != rev {
			continue
		}
		return data, commit[:10], p
	}
	return nil, "", ""
}

// nearHint is the " (did you mean ...?)" of the documents of kind whose
// names are near name, or "" (items are named by id: a prefix finds them).
func nearHint(s *docstore.Store, kind *schema.Kind, name string) string {
	if kind == nil || kind == schema.Item {
		return ""
	}
	files, err := s.ListFiles(kind)
	if err != nil {
		return ""
	}
	var names []string
	for _, f := range files {
		if _, n, err := schema.NameOfPath(f); err == nil {
			names = append(names, n)
		}
	}
	if near := schema.Near(name, names); len(near) > 0 {
		return " (did you mean " + schema.NearList(near) + "?)"
	}
	return ""
}
