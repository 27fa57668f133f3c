package agents

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"
	"time"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/tuples"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// refsCheck is the check (`tavern check`) of the names documents give of
// agents, queues and channels that have no document here (InstallRules):
//
//   - commitments/<agent>/ and bookmarks/<agent>.md of an agent with no
//     document: nobody proves those commitments, nobody reads with that
//     bookmark;
//   - a reservation (tuples/reservation/) of such an agent, not expired:
//     it keeps others from its paths until it expires, and no one can
//     release it as its holder;
//   - an open question addressed (to:) to such an agent: nobody answers
//     it;
//   - an agent's queue or queues naming a queue with no queue.md: its
//     worker finds no queue there;
//   - a bookmark's channels: key naming a channel with no document and no
//     messages (a recv there starts from nothing again);
//   - a pool document's queues naming a queue with no queue.md: the
//     record of what its last `pool run` was given (nothing reads it as
//     configuration), so a warning whatever the name;
//   - a message chunk under a channel with no document (doctor's
//     stray-messages): an error whatever the name.
//
// What each is follows the near-typo rules the writes obey (ownerRule,
// namesRule): a name near an existing one (alcie beside alice) is an
// error (exit 5), a typo nothing will ever match, unless its document
// is known: in .trash/ (removed here: `tavern trash restore` brings it
// back) or in a journal, this machine's or another's the sync brought
// (it existed here or there: removed on another machine, say). Those,
// and a name near none, are warnings: a document another machine made
// whose counterpart has not synced here yet, or one of something
// removed, is a legitimate state and must not make check fail. "user"
// (the person) is no agent and always fine.
func refsCheck(s *docstore.Store) docstore.Check {
	var trashOnce, journalOnce sync.Once
	trashed, journaled := map[string]bool{}, map[string]bool{}
	removed := func(rel string) bool {
		trashOnce.Do(func() {
			ents, _ := s.Trash()
			for _, e := range ents {
				trashed[e.Path] = true
			}
		})
		return trashed[rel]
	}
	// seen: a journal (this machine's or one the sync brought) records
	// the document, so the name is no typo: it was here or there. Read
	// once per run, and only for a name near an existing one.
	seen := func(rel string) bool {
		journalOnce.Do(func() {
			f := journal.Filter{Kinds: []string{schema.Agent.Name, schema.Queue.Name, schema.Channel.Name}}
			_, _ = journal.Read(s.Root(), f, func(e journal.Event, err error) bool {
				journaled[e.Path] = journaled[e.Path] || err == nil
				return true
			})
			_ = journal.ReadOthers(s.Root(), f, func(_ string, e journal.Event, err error) bool {
				journaled[e.Path] = journaled[e.Path] || err == nil
				return true
			})
		})
		return journaled[rel]
	}
	// ref judges a name that names nothing: lookup is the lookup's error
	// (a *schema.UnknownError with its near names); rel is the document
	// it would be.
	ref := func(d *docstore.Doc, field, what, name, rel, why string, lookup error, warnAlways bool) error {
		var ue *schema.UnknownError
		if !errors.As(lookup, &ue) {
			return nil // it exists, or is no valid name (the schema's)
		}
		warn := true
		switch {
		case removed(rel):
			why += " (removed here: `tavern trash restore " + rel + "` brings it back)"
		case len(ue.Near) > 0 && !warnAlways && !seen(rel):
			why += " (a typo? it is near an existing " + what + ", and no journal has ever seen it)"
			warn = false
		case len(ue.Near) > 0 && !warnAlways:
			why += " (it was here or on another machine: removed, or not synced here yet)"
		default:
			why += " (another machine's, not synced here yet, or removed)"
		}
		return d.RefAt(field, what, name, ue.Near, why, warn)
	}
	agent := func(d *docstore.Doc, field, name, why string) error {
		if name == "" || name == Person || name == User {
			return nil
		}
		return ref(d, field, "agent", name, AgentPath(name), why, AgentExists(s, name), false)
	}
	queue := func(d *docstore.Doc, field, name, why string, warnAlways bool) error {
		if name == "" {
			return nil
		}
		return ref(d, field, "queue", name, queues.QueuePath(name), why, queues.CheckQueue(s, name), warnAlways)
	}
	return func(d *docstore.Doc) []error {
		var out []error
		add := func(err error) {
			if err != nil {
				out = append(out, err)
			}
		}
		switch d.Kind {
		case schema.Commitment:
			_, caps, err := schema.KindOfPath(d.Path)
			if err == nil {
				add(agent(d, "agent", caps["agent"], "a commitment of an agent that has no document: nobody proves it"))
			}
		case schema.Bookmark:
			_, caps, err := schema.KindOfPath(d.Path)
			if err == nil {
				add(agent(d, "agent", caps["agent"], "the bookmark of an agent that has no document: nobody reads with it"))
			}
			if n := d.Get("channels"); n != nil {
				for i := 0; i+1 < len(n.Content); i += 2 {
					ch := n.Content[i].Value
					if messages.ValidChannel(ch) != nil {
						continue
					}
					cerr := messages.CheckChannel(s, ch)
					if _, err := os.Stat(filepath.Join(s.Root(), "messages", ch)); err == nil {
						cerr = nil // messages without a channel document: doctor's stray-messages
					}
					add(ref(d, "channels", "channel", ch, "channels/"+ch+".md", "a bookmark of a channel that has no document", cerr, false))
				}
			}
		case schema.Chunk:
			// Doctor's stray-messages, file by file: messages under a
			// channel that has no document are read and listed by
			// nothing. An error whatever the name: the sync and rm take
			// a channel's messages with its document.
			if _, caps, err := schema.KindOfPath(d.Path); err == nil {
				ch := caps["channel"]
				rel, err := schema.Channel.Path(ch, nil)
				if _, serr := os.Stat(filepath.Join(s.Root(), filepath.FromSlash(rel))); err == nil && errors.Is(serr, fs.ErrNotExist) {
					var near []string
					var ue *schema.UnknownError
					if errors.As(messages.CheckChannel(s, ch), &ue) {
						near = ue.Near
					}
					add(d.RefAt("channel", "channel", ch, near, "messages of a channel that has no document "+rel+
						": nothing lists or reads them (`tavern doctor --fix` creates the document)", false))
				}
			}
		case schema.Tuple:
			if path.Dir(d.Path) != "tuples/"+tuples.ReservationType {
				return nil
			}
			if t, ok := d.Time("expires"); ok && !t.After(time.Now()) {
				return nil // expired: it guards nothing any more
			}
			add(agent(d, "agent", d.String("agent"), "a reservation of an agent that has no document: it keeps others from its paths until it expires"))
		case schema.Question:
			if d.String("status") == QuestionOpen || d.String("status") == "" {
				add(agent(d, "to", d.String("to"), "an open question to an agent that has no document: nobody answers it"))
			}
		case schema.Agent:
			if d.Has("queues") {
				for _, q := range d.Strings("queues") {
					add(queue(d, "queues", q, "the agent's worker finds no such queue", false))
				}
			}
			add(queue(d, "queue", d.String("queue"), "the agent's worker finds no such queue", false))
		case schema.Pool:
			for _, q := range d.Strings("queues") {
				add(queue(d, "queues", q, "the record of a queue its last `pool run` worked on; nothing reads it as configuration", true))
			}
		}
		return out
	}
}
