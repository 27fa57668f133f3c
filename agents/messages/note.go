package messages

import (
	"strings"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// Note is a reflection an agent attached to a channel
// (notes/<channel>/<id>.md). Notes are not messages: they are not in the
// channel's timeline and have no unread state.
type Note struct {
	ID      string           `json:"id"`
	Channel string           `json:"channel"`
	Agent   string           `json:"agent"`
	Created schema.Timestamp `json:"created"`
	Text    string           `json:"text"`
	Path    string           `json:"path"`
}

// AddNote writes a note by agent on channel (which must exist:
// CheckChannel). Any agent may write one on another's direct channel, as
// any may send to it: the note is its writer's own words, and only the
// channel's readers (CanRead) read it back.
func AddNote(s *docstore.Store, channel, agent, text string) (*Note, error) {
	if err := CheckChannel(s, channel); err != nil {
		return nil, err
	}
	if err := schema.ValidAgentName(agent); err != nil {
		return nil, err
	}
	text = strings.TrimRight(text, "\r\n")
	if strings.TrimSpace(text) == "" {
		return nil, ErrEmptyMessage
	}
	// Checked again under the channel's lock, which an rm of the channel
	// holds until its notes are in the trash (ChannelLocks): a note after
	// the rm is refused, never left without its channel.
	l, err := s.Lock(schema.ChannelLockKey(channel))
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	if err := CheckChannel(s, channel); err != nil {
		return nil, err
	}
	d, err := s.CreateEntry(schema.Note, channel, []docstore.Field{
		{Key: "channel", Value: channel},
		{Key: "agent", Value: agent},
	}, text)
	if err != nil {
		return nil, err
	}
	return noteOf(d), nil
}

func noteOf(d *docstore.Doc) *Note {
	n := &Note{ID: d.String("id"), Channel: d.String("channel"), Agent: d.String("agent"), Path: d.Path,
		Text: strings.TrimSpace(string(d.Body()))}
	n.Created.Time, _ = d.Time("created")
	return n
}

// ListNotes returns the notes of channel read by reader, oldest first.
// Another agent's direct channel is refused as Recv refuses it (CanRead,
// a *DirectError); reader "" is the caller that names nobody. A note file
// that does not parse hides no other: it is skipped, and the list is
// returned with a *docstore.SkippedError naming each such file.
func ListNotes(s *docstore.Store, reader, channel string) ([]*Note, error) {
	if err := CheckChannel(s, channel); err != nil {
		return nil, err
	}
	if err := checkReader(s, "notes", reader, channel); err != nil {
		return nil, err
	}
	paths, err := s.ListFiles(schema.Note)
	if err != nil {
		return nil, err
	}
	var out []*Note
	var bad []error
	prefix := "notes/" + channel + "/"
	for _, p := range paths {
		if !strings.HasPrefix(p, prefix) {
			continue
		}
		d, err := s.Get(p)
		if err != nil {
			if badFile(err) {
				bad = append(bad, err) // reported, skipped
				continue
			}
			return out, err
		}
		out = append(out, noteOf(d))
	}
	return out, skipped(bad)
}
