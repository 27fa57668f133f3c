package agents

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

const (
	// DefaultChunkSize is the number of messages per chunk when tavern.md
	// does not set chunk_size.
	DefaultChunkSize = 100
	// ChunkSpan is the longest time one chunk covers: a message more than
	// this after the chunk's first message starts a new chunk, so a quiet
	// channel's files still split by hour.
	ChunkSpan = time.Hour
	// MaxMessageSize bounds one message's text.
	MaxMessageSize = 1 << 20
	// maxChunkBytes starts a new chunk early when the current one is this
	// large, keeping chunks well under docstore.MaxDocSize whatever the
	// message sizes.
	maxChunkBytes = 4 << 20
)

// SendMessage appends one message from sender to channel and returns its
// id. It is SendMessages with one text.
func SendMessage(s *docstore.Store, channel, sender, text string) (id string, err error) {
	ids, err := SendMessages(s, channel, sender, []string{text})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// SendMessages appends texts, in order, as messages from sender to channel
// and returns their ids. The channel document is created on first use.
//
// Appends hold the channel's lock (.locks/channels/<name>.lock) while they
// read the current chunk, add the messages and write the whole chunk back
// through the durable write path, so concurrent senders in any number of
// processes never lose or duplicate a message. A batch costs one durable
// write per chunk it touches, which is why spawn's output capture batches
// lines. When SendMessages returns nil, every message is on disk.
//
// Trailing newlines of a text are dropped; an empty text is refused
// (ErrEmptyMessage) so a stray blank line never becomes a message.
func SendMessages(s *docstore.Store, channel, sender string, texts []string) (ids []string, err error) {
	if err := ValidChannel(channel); err != nil {
		return nil, err
	}
	if err := validAgent(sender); err != nil {
		return nil, fmt.Errorf("sender: %w", err)
	}
	clean := make([]string, len(texts))
	for i, t := range texts {
		t = strings.TrimRight(t, "\r\n")
		switch {
		case strings.TrimSpace(t) == "":
			return nil, ErrEmptyMessage
		case len(t) > MaxMessageSize:
			return nil, ErrMessageTooLarge
		case strings.ContainsRune(t, 0):
			return nil, fmt.Errorf("%w: NUL byte in message text", ErrBadMessage)
		}
		clean[i] = strings.ToValidUTF8(t, "\uFFFD")
	}
	if len(clean) == 0 {
		return nil, nil
	}
	size := chunkSize(s)
	l, err := s.Lock(channelLockKey(channel))
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	ch, err := ensureChannel(s, channel)
	if err != nil {
		return nil, err
	}
	if ch.Bool("archived") {
		return nil, &fs.PathError{Op: "send", Path: ch.Path, Err: ErrArchived}
	}
	a, err := openAppender(s, l, channel)
	if err != nil {
		return nil, err
	}
	for _, t := range clean {
		now := time.Now().UTC().Truncate(time.Millisecond)
		if now.Before(a.lastTime) {
			now = a.lastTime // clocks step back; times in a channel never do
		}
		m := Message{ID: nextID(a.lastID), Channel: channel, Sender: sender, Time: now, Text: t}
		if err := a.add(m, size); err != nil {
			return ids, err
		}
		ids = append(ids, m.ID)
	}
	if err := a.flush(); err != nil {
		return nil, err
	}
	return ids, nil
}

func chunkSize(s *docstore.Store) int {
	if d, err := s.Get(docstore.ConfigFile); err == nil {
		if n, ok := d.Int("chunk_size"); ok && n > 0 {
			return int(n)
		}
	}
	return DefaultChunkSize
}

// appender builds up the writes of one SendMessages call.
type appender struct {
	s       *docstore.Store
	l       *docstore.Lock
	channel string

	lastID   string
	lastTime time.Time

	// The open chunk: the latest one, or a new one not yet on disk.
	rel       string
	doc       *docstore.Doc // nil for a new chunk
	isNew     bool
	body      bytes.Buffer // sections added by this call
	baseLen   int          // body length already on disk
	count     int
	firstID   string
	firstTime time.Time
	dirty     bool
}

func openAppender(s *docstore.Store, l *docstore.Lock, channel string) (*appender, error) {
	a := &appender{s: s, l: l, channel: channel}
	chunks, err := chunkFiles(s, channel)
	if err != nil {
		return nil, err
	}
	if len(chunks) == 0 {
		return a, nil
	}
	rel := chunks[len(chunks)-1]
	d, err := s.Get(rel)
	if err != nil {
		return nil, err
	}
	msgs, err := chunkMessages(d)
	if err != nil {
		return nil, err
	}
	a.rel, a.doc = rel, d
	a.baseLen = len(d.Body())
	a.count = len(msgs)
	if len(msgs) > 0 {
		a.firstID, a.firstTime = msgs[0].ID, msgs[0].Time
		last := msgs[len(msgs)-1]
		a.lastID, a.lastTime = last.ID, last.Time
	} else {
		a.firstID = d.String("first_id")
	}
	return a, nil
}

func (a *appender) add(m Message, size int) error {
	var sec bytes.Buffer
	renderMessage(&sec, m)
	full := a.rel == "" || a.count >= size ||
		(a.count > 0 && m.Time.Sub(a.firstTime) >= ChunkSpan) ||
		(a.count > 0 && a.baseLen+a.body.Len()+sec.Len() > maxChunkBytes)
	if full {
		if err := a.flush(); err != nil {
			return err
		}
		rel, err := schema.Chunk.Path(a.channel+"/"+m.ID, nil)
		if err != nil {
			return err
		}
		a.rel, a.doc, a.isNew = rel, nil, true
		a.body.Reset()
		a.baseLen, a.count = 0, 0
	}
	if a.count == 0 {
		a.firstID, a.firstTime = m.ID, m.Time
	}
	a.body.Write(sec.Bytes())
	a.count++
	a.lastID, a.lastTime = m.ID, m.Time
	a.dirty = true
	return nil
}

// flush writes the open chunk if this call added to it.
func (a *appender) flush() error {
	if !a.dirty {
		return nil
	}
	a.dirty = false
	set := func(d *docstore.Doc) error {
		for _, kv := range [][2]any{
			{"channel", a.channel},
			{"first_id", a.firstID},
			{"last_id", a.lastID},
			{"first_time", a.firstTime},
			{"last_time", a.lastTime},
			{"message_count", a.count},
			{"updated", a.lastTime},
		} {
			if err := d.Set(kv[0].(string), kv[1]); err != nil {
				return err
			}
		}
		return nil
	}
	if a.isNew {
		d, err := docstore.New(schema.Chunk, [][2]any{
			{schema.VersionField, schema.Chunk.Version},
			{"id", a.firstID},
			{"channel", a.channel},
			{"created", a.firstTime},
		}, nil)
		if err != nil {
			return err
		}
		if err := set(d); err != nil {
			return err
		}
		d.SetBody(append([]byte("\n"), a.body.Bytes()...))
		if err := a.s.Create(a.rel, d); err != nil {
			return err
		}
		a.isNew, a.doc = false, d
	} else {
		add := a.body.Bytes()
		d, err := a.s.UpdateHeld(a.l, a.rel, func(d *docstore.Doc) error {
			body := d.Body()
			if a.doc != nil && !bytes.Equal(body, a.doc.Body()) {
				return &docstore.ConflictError{Path: a.rel, Want: a.doc.Rev, Got: d.Rev}
			}
			nb := make([]byte, 0, len(body)+1+len(add))
			nb = append(nb, body...)
			if len(nb) > 0 && !bytes.HasSuffix(nb, []byte("\n\n")) {
				// A hand edit dropped the separator: restore it so our
				// header starts a line of its own.
				if !bytes.HasSuffix(nb, []byte("\n")) {
					nb = append(nb, '\n')
				}
				nb = append(nb, '\n')
			}
			nb = append(nb, add...)
			d.SetBody(nb)
			return set(d)
		})
		if err != nil {
			return err
		}
		a.doc = d
	}
	a.baseLen = len(a.doc.Body())
	a.body.Reset()
	return nil
}

// chunkFiles lists a channel's chunk paths in time order (chunk names are
// the UUIDv7 id of their first message, so name order is time order).
func chunkFiles(s *docstore.Store, channel string) ([]string, error) {
	dir := filepath.Join(s.Root(), "messages", channel)
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []string
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(name, ".md") || strings.HasPrefix(name, ".") {
			continue
		}
		out = append(out, messagesDir(channel)+"/"+name)
	}
	sort.Strings(out)
	return out, nil
}

// chunkMessages parses a chunk document's messages, reporting a malformed
// section as a *docstore.ParseError with its file line.
func chunkMessages(d *docstore.Doc) ([]Message, error) {
	msgs, err := ParseChunkBody(d.Body())
	if err != nil {
		var ce *ChunkError
		if errors.As(err, &ce) {
			all := d.Bytes()
			bodyLine := bytes.Count(all[:len(all)-len(d.Body())], []byte("\n"))
			return nil, &docstore.ParseError{Path: d.Path, Line: bodyLine + ce.Line, Col: 1, Msg: ce.Msg}
		}
		return nil, err
	}
	ch := d.String("channel")
	if ch == "" {
		if _, caps, err := schema.KindOfPath(d.Path); err == nil {
			ch = caps["channel"]
		}
	}
	for i := range msgs {
		msgs[i].Channel = ch
		msgs[i].Chunk = d.Path
	}
	return msgs, nil
}

// ReadMessages returns the messages of channel with an id greater than
// after ("" for all), oldest first, at most limit (0 for no limit).
func ReadMessages(s *docstore.Store, channel, after string, limit int) ([]Message, error) {
	if err := ValidChannel(channel); err != nil {
		return nil, err
	}
	chunks, err := chunkFiles(s, channel)
	if err != nil {
		return nil, err
	}
	// Skip chunks that end before after: the chunk holding after is the
	// last one whose name (first id) is <= after.
	start := 0
	if after != "" {
		for i, c := range chunks {
			if chunkName(c) <= after {
				start = i
			}
		}
	}
	var out []Message
	for _, c := range chunks[start:] {
		d, err := s.Get(c)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return out, err
		}
		msgs, err := chunkMessages(d)
		if err != nil {
			return out, err
		}
		for _, m := range msgs {
			if m.ID > after {
				out = append(out, m)
				if limit > 0 && len(out) >= limit {
					return out, nil
				}
			}
		}
	}
	return out, nil
}

// countMessages counts a channel's messages from the chunks' frontmatter.
func countMessages(s *docstore.Store, channel string) (int, error) {
	chunks, err := chunkFiles(s, channel)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range chunks {
		d, err := s.Get(c)
		if err != nil {
			return n, err
		}
		k, _ := d.Int("message_count")
		n += int(k)
	}
	return n, nil
}

// countAfter counts the messages of channel with an id greater than after,
// parsing only the chunk that holds after and trusting message_count of the
// chunks past it.
func countAfter(s *docstore.Store, channel, after string) (int, string, error) {
	chunks, err := chunkFiles(s, channel)
	if err != nil {
		return 0, "", err
	}
	n := 0
	last := ""
	for i, c := range chunks {
		if after != "" && i+1 < len(chunks) && chunkName(chunks[i+1]) <= after {
			continue // wholly before after
		}
		d, err := s.Get(c)
		if err != nil {
			return n, last, err
		}
		if l := d.String("last_id"); l > last {
			last = l
		}
		if after == "" || chunkName(c) > after {
			k, _ := d.Int("message_count")
			n += int(k)
			continue
		}
		msgs, err := chunkMessages(d)
		if err != nil {
			return n, last, err
		}
		for _, m := range msgs {
			if m.ID > after {
				n++
			}
		}
	}
	return n, last, nil
}

func chunkName(rel string) string {
	return strings.TrimSuffix(rel[strings.LastIndexByte(rel, '/')+1:], ".md")
}

// nextID returns a new UUIDv7 greater than last. UUIDv7s of different
// processes made in the same millisecond are unordered, and a message id
// must sort after every earlier message of its channel; so when a fresh id
// does not, the successor of last (its random bits plus one) is used. Both
// keep the version and variant bits, so the result is still a valid UUIDv7
// whose time is within a millisecond of the truth.
func nextID(last string) string {
	id := docstore.NewID()
	if id > last {
		return id
	}
	u, err := uuid.Parse(last)
	if err != nil {
		return id // a hand-made last id; order cannot be kept anyway
	}
	// Increment the 62 random bits of octets 8..15 (below the variant).
	for i := 15; i >= 8; i-- {
		if i == 8 {
			v := u[8]&0x3f + 1
			u[8] = u[8]&0xc0 | v&0x3f
			if v <= 0x3f {
				return u.String()
			}
			break
		}
		u[i]++
		if u[i] != 0 {
			return u.String()
		}
	}
	// rand_b wrapped: carry into the 12 bits of rand_a, then the time.
	for i := 7; i >= 0; i-- {
		if i == 6 {
			v := u[6]&0x0f + 1
			u[6] = u[6]&0xf0 | v&0x0f
			if v <= 0x0f {
				return u.String()
			}
			continue
		}
		u[i]++ // octet 7 is rand_a's low byte, 0..5 the millisecond time
		if u[i] != 0 {
			return u.String()
		}
	}
	return id
}
