package messages

import (
	"context"
	"errors"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// Bookmarks are bookmarks/<agent>.md: a `channels` map from channel name to
// the id of the last message the agent has read there. Message ids strictly
// increase within a channel, so "unread" is "id greater than the bookmark".

func bookmarkPath(agent string) (string, error) {
	if err := schema.ValidAgentName(agent); err != nil {
		return "", err
	}
	return schema.Bookmark.Path(agent, nil)
}

// ensureBookmarks creates the agent's bookmark document if it is missing.
func ensureBookmarks(s *docstore.Store, agent string) (string, error) {
	rel, err := bookmarkPath(agent)
	if err != nil {
		return "", err
	}
	if _, err := cachedGet(s, rel); err == nil {
		return rel, nil
	}
	now := time.Now()
	d, err := docstore.New(schema.Bookmark, []docstore.Field{
		{Key: schema.VersionField, Value: schema.Bookmark.Version},
		{Key: "id", Value: docstore.NewID()},
		{Key: "agent", Value: agent},
		{Key: "channels", Value: map[string]string{}},
		{Key: "created", Value: now},
		{Key: "updated", Value: now},
	}, []byte("\n"))
	if err != nil {
		return "", err
	}
	if err := s.Create(rel, d); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	return rel, nil
}

// Bookmarks returns the agent's last-read message id per channel (empty if
// it has never read anything).
func Bookmarks(s *docstore.Store, agent string) (map[string]string, error) {
	rel, err := bookmarkPath(agent)
	if err != nil {
		return nil, err
	}
	d, err := s.Get(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := checkBookmarks(d); err != nil {
		return nil, err
	}
	return bookmarkMap(d), nil
}

// lateOf reads the agent's late messages per channel (lateMap).
func lateOf(s *docstore.Store, agent string) (map[string][]string, error) {
	rel, err := bookmarkPath(agent)
	if err != nil {
		return nil, err
	}
	d, err := s.Get(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string][]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return lateMap(d), nil
}

// checkBookmarks refuses a bookmark document that does not validate (a
// bookmark edited into something that is no message id): read as it is,
// it would hide messages or show them again without a word.
func checkBookmarks(d *docstore.Doc) error {
	if errs := d.Validate(false); len(errs) > 0 {
		return &docstore.ValidationError{Path: d.Path, Errors: errs}
	}
	return nil
}

func bookmarkMap(d *docstore.Doc) map[string]string {
	out := map[string]string{}
	if n := d.Get("channels"); n != nil {
		var m map[string]string
		if n.Decode(&m) == nil {
			for k, v := range m {
				out[k] = v
			}
		}
	}
	return out
}

// lateMap is a bookmark's `late` field: per channel, the ids of messages
// older than the bookmark that reached this store after the reader had
// read past them (another machine's, brought by a sync: MarkLate). They
// are unread: Recv returns them with the newer ones and drops them.
func lateMap(d *docstore.Doc) map[string][]string {
	out := map[string][]string{}
	if n := d.Get("late"); n != nil {
		var m map[string][]string
		if n.Decode(&m) == nil {
			for k, v := range m {
				if len(v) > 0 {
					out[k] = v
				}
			}
		}
	}
	return out
}

// setLate writes late into d, without the field when nothing is late.
func setLate(d *docstore.Doc, late map[string][]string) error {
	for k, v := range late {
		if len(v) == 0 {
			delete(late, k)
		} else {
			sort.Strings(v)
		}
	}
	if len(late) == 0 {
		if d.Has("late") {
			return d.Delete("late")
		}
		return nil
	}
	return d.Set("late", late)
}

// readUnread reads reader's unread messages of channel for a bookmark at
// after with the late ids late (all of them with all), at most limit, and
// returns them, the id the bookmark may move to (the last message read,
// the reader's own included) and what remains late after they are
// returned. The reader's own messages are read but not returned (with
// all they are): they are never unread for it (fromReader).
func readUnread(s *docstore.Store, channel, reader, after string, late []string, all bool, limit int) (msgs []Message, last string, rest []string, err error) {
	var also map[string]bool
	if !all && len(late) > 0 {
		also = make(map[string]bool, len(late))
		for _, id := range late {
			also[id] = true
		}
	}
	from, own := after, reader
	if all {
		from, own = "", ""
	}
	read, cut, err := readMessages(s, channel, from, also, own, limit)
	if len(read) > 0 {
		last = read[len(read)-1].ID
	}
	msgs = read
	if own != "" {
		msgs = make([]Message, 0, len(read))
		for _, m := range read {
			if !fromReader(m, own) {
				msgs = append(msgs, m)
			}
		}
	}
	if err != nil || !cut {
		// Every late id was read (or its message is gone: a hand edit
		// removed it), so none stays.
		return msgs, last, nil, err
	}
	got := make(map[string]bool, len(read))
	for _, m := range read {
		got[m.ID] = true
	}
	for _, id := range late {
		if !got[id] {
			rest = append(rest, id)
		}
	}
	return msgs, last, rest, nil
}

// fromReader reports whether m is reader's own: sent as reader, or its
// output the spawn wrapper captured ("alice:stdout"). A reader's own
// messages are never unread for it: Recv passes over them (its bookmark
// moves past them) and Inbox does not count them, so sending on a
// channel one reads leaves nothing to read. Counting them costs Inbox a
// parse only of the chunks past the bookmark that name the reader; send
// writes nothing more.
func fromReader(m Message, reader string) bool {
	if reader == "" {
		return false
	}
	name, _, _ := strings.Cut(m.Sender, ":")
	return name == reader
}

// RecvOptions tune Recv.
type RecvOptions struct {
	// All returns every message of the channel, read or not (the bookmark
	// still advances to the newest).
	All bool
	// Limit caps the messages returned (0: no cap); the bookmark advances
	// only past the returned ones, so the rest stay unread.
	Limit int
}

// Recv returns the agent's unread messages of channel (which must exist:
// CheckChannel), oldest first, and
// advances its bookmark past them. Reading and advancing happen under the
// bookmark document's lock, so two concurrent Recvs by one agent never
// return the same message twice. The agent's own messages are not
// unread (fromReader): without opt.All they are passed over, not
// returned. Another agent's direct channel is refused (CanRead, a
// *DirectError) before anything is written.
func Recv(s *docstore.Store, agent, channel string, opt RecvOptions) ([]Message, error) {
	if err := CheckChannel(s, channel); err != nil {
		return nil, err
	}
	if err := checkReader(s, "recv", agent, channel); err != nil {
		return nil, err
	}
	rel, err := ensureBookmarks(s, agent)
	if err != nil {
		return nil, err
	}
	var msgs []Message
	_, err = s.Update(rel, func(d *docstore.Doc) error {
		if err := checkBookmarks(d); err != nil {
			return err
		}
		marks, late := bookmarkMap(d), lateMap(d)
		after := marks[channel]
		var rest []string
		var last string
		msgs, last, rest, err = readUnread(s, channel, agent, after, late[channel], opt.All, opt.Limit)
		if err != nil {
			return err
		}
		moved := len(rest) != len(late[channel])
		if last > after {
			marks[channel], moved = last, true
		}
		if !moved {
			return nil
		}
		late[channel] = rest
		return writeMarks(d, marks, late)
	})
	return msgs, err
}

// writeMarks sets a bookmark's channels and late fields and its updated
// time.
func writeMarks(d *docstore.Doc, marks map[string]string, late map[string][]string) error {
	if err := d.Set("channels", marks); err != nil {
		return err
	}
	if err := setLate(d, late); err != nil {
		return err
	}
	return d.Set("updated", time.Now())
}

// RecvEach is Recv over several channels in one go: under one lock of the
// bookmark document it reads each channel's unread messages in turn (at
// most opt.Limit each; opt.All is ignored), hands them to take, and
// advances that channel's bookmark past them; it stops when take returns
// false. A channel that cannot be read is skipped (its error is in
// skipped); err means the bookmarks were not written — none advanced, and
// the caller must not deliver what take was given. All bookmarks are written at once: one durable write for the
// lot, not one per channel (a hook delivering a backlog after every tool
// call of an agent session would otherwise pay a flush per channel).
func RecvEach(s *docstore.Store, agent string, channels []string, opt RecvOptions, take func(channel string, msgs []Message) bool) (skipped []error, err error) {
	for _, ch := range channels {
		if err := ValidChannel(ch); err != nil {
			return nil, err
		}
		if err := checkReader(s, "recv", agent, ch); err != nil {
			return nil, err
		}
	}
	rel, err := ensureBookmarks(s, agent)
	if err != nil {
		return nil, err
	}
	var readErrs []error
	_, err = s.Update(rel, func(d *docstore.Doc) error {
		if err := checkBookmarks(d); err != nil {
			return err
		}
		marks, late := bookmarkMap(d), lateMap(d)
		moved := false
		readErrs = readErrs[:0]
		for _, ch := range channels {
			msgs, last, rest, err := readUnread(s, ch, agent, marks[ch], late[ch], false, opt.Limit)
			if err != nil {
				readErrs = append(readErrs, err) // that channel only; the others go on
				continue
			}
			if len(rest) != len(late[ch]) {
				late[ch], moved = rest, true
			}
			if last > marks[ch] {
				marks[ch], moved = last, true
			}
			if len(msgs) == 0 {
				continue // nothing, or only the agent's own
			}
			if !take(ch, msgs) {
				break
			}
		}
		if !moved {
			return nil // unchanged: not written
		}
		return writeMarks(d, marks, late)
	})
	return readErrs, err
}

// RecvWait is Recv that, when nothing is unread, blocks until a message
// arrives or ctx is done (then it returns ctx's error).
func RecvWait(ctx context.Context, s *docstore.Store, agent, channel string, opt RecvOptions) ([]Message, error) {
	// Refused before the wait, which would make the channel's directory.
	if err := CheckChannel(s, channel); err != nil {
		return nil, err
	}
	if err := checkReader(s, "recv", agent, channel); err != nil {
		return nil, err
	}
	if opt.All {
		if msgs, err := Recv(s, agent, channel, opt); err != nil || len(msgs) > 0 {
			return msgs, err
		}
	}
	opt.All = false
	var msgs []Message
	rel, err := bookmarkPath(agent)
	if err != nil {
		return nil, err
	}
	err = waitChannel(ctx, s, channel, rel, func() (bool, error) {
		var err error
		msgs, err = Recv(s, agent, channel, opt)
		return len(msgs) > 0, err
	})
	return msgs, err
}

// Unread is one line of an agent's inbox.
type Unread struct {
	Channel string `json:"channel"`
	Count   int    `json:"unread"`
	LastID  string `json:"last_id,omitempty"` // newest message of the channel
}

// Inbox returns the agent's unread counts for every active channel it can
// read — all channels except other agents' direct channels — highest
// count first, then by name. The agent's own messages are not unread
// (fromReader). A channel document or chunk that does not
// parse hides nothing else: the counts of the rest are returned with a
// *docstore.SkippedError naming each such file (path:line:col), and a
// channel with a broken chunk counts its other chunks.
func Inbox(s *docstore.Store, agent string) ([]Unread, error) {
	marks, err := Bookmarks(s, agent)
	if err != nil {
		return nil, err
	}
	late, err := lateOf(s, agent)
	if err != nil {
		return nil, err
	}
	// channelDocs, not ListChannels: its counts of every channel (other
	// agents' direct ones too) would be thrown away, and one broken chunk
	// anywhere would fail every agent's inbox.
	chs, errs := channelDocs(s, false)
	var bad []error
	for _, err := range errs {
		if !badFile(err) {
			return nil, err
		}
		bad = append(bad, err)
	}
	var out []Unread
	for _, c := range chs {
		if strings.HasPrefix(c.Name, "@") && c.Name != DirectChannel(agent) {
			continue
		}
		n, last, skip, err := countAfter(s, c.Name, agent, marks[c.Name], late[c.Name])
		if err != nil {
			return nil, err
		}
		bad = append(bad, skip...)
		out = append(out, Unread{Channel: c.Name, Count: n, LastID: last})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Channel < out[j].Channel
	})
	return out, skipped(bad)
}
