package messages

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
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

// SendOptions tune Send.
type SendOptions struct {
	// Create creates the channel if it does not exist; without it an
	// unknown channel is refused (CheckChannel), so a typo never creates
	// one.
	Create bool
}

// Send appends one message from sender to channel and returns its id. A
// channel that does not exist is refused with a *schema.UnknownError
// unless opt.Create is set; even then a direct channel of an agent that
// does not exist is not made (CreateChannel's rule), nor one whose name is
// near an existing channel's (a *ChannelError: a typo).
func Send(s *docstore.Store, channel, sender, text string, opt SendOptions) (string, error) {
	if err := CheckChannel(s, channel); err != nil {
		if !opt.Create {
			return "", err
		}
		// Create makes a missing channel, not a typo of an existing one:
		// the message would go where nobody reads. (A direct channel is
		// judged by its agent, below.)
		var ue *schema.UnknownError
		if errors.As(err, &ue) && len(ue.Near) > 0 && !strings.HasPrefix(channel, "@") {
			rel, _ := channelPath(channel)
			return "", &ChannelError{Op: "send", Path: rel, Channel: channel, Near: ue.Near}
		}
		if _, err := CreateChannel(s, channel, ""); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	// Without Create, the channel is checked again under its lock: an rm
	// of it since the check above holds that lock until its messages are
	// gone, and after it the send is refused, never the channel made again.
	ids, err := sendMessages(s, channel, sender, []string{text}, !opt.Create)
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// SendMessage appends one message from sender to channel and returns its
// id, creating the channel on first use (the engine's own writes: the
// spawn wrapper's output capture). It is SendMessages with one text.
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
	return sendMessages(s, channel, sender, texts, false)
}

// sendMessages is SendMessages that, with known, refuses a channel that
// does not exist (CheckChannel) instead of making it: checked under the
// channel's lock, which an rm of the channel holds until it is all gone.
func sendMessages(s *docstore.Store, channel, sender string, texts []string, known bool) (ids []string, err error) {
	if err := ValidChannel(channel); err != nil {
		return nil, err
	}
	if err := validSender(sender); err != nil {
		return nil, err
	}
	clean := make([]string, len(texts))
	for i, t := range texts {
		t = strings.TrimRight(t, "\r\n")
		switch {
		case strings.TrimSpace(t) == "":
			return nil, ErrEmptyMessage
		case len(t) > MaxMessageSize:
			// The sizes and the way out: the sender (often a model) can
			// do nothing with a bare "too large".
			return nil, fmt.Errorf("%w: %d bytes, at most %d (put the text in a file and send its path)", ErrMessageTooLarge, len(t), MaxMessageSize)
		case strings.ContainsRune(t, 0):
			return nil, fmt.Errorf("%w: NUL byte in message text", ErrBadMessage)
		}
		clean[i] = strings.ToValidUTF8(t, "\uFFFD")
	}
	if len(clean) == 0 {
		return nil, nil
	}
	size := chunkSize(s)
	l, err := s.Lock(schema.ChannelLockKey(channel))
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	if known {
		if err := CheckChannel(s, channel); err != nil {
			return nil, err
		}
	}
	ch, err := ensureChannel(s, channel)
	if err != nil {
		return nil, err
	}
	if ch.Bool("archived") {
		return nil, &fs.PathError{Op: "send", Path: ch.Path, Err: ErrArchived}
	}
	chunks, err := chunkFiles(s, channel)
	if err != nil {
		return nil, err
	}
	var st chunkState
	pending := clean
	if len(chunks) > 0 {
		// Fill the latest chunk inside one read-modify-write; UpdateHeld
		// writes nothing if it is already full.
		latest := chunks[len(chunks)-1]
		var added []string
		_, err := s.UpdateHeld(l, latest, func(d *docstore.Doc) error {
			msgs, err := chunkMessages(d)
			if err != nil {
				return err
			}
			st = stateOf(msgs)
			var buf bytes.Buffer
			added, pending = st.fill(&buf, channel, sender, pending, size, len(d.Body()))
			if len(added) == 0 {
				return nil
			}
			body := d.Body()
			nb := make([]byte, 0, len(body)+2+buf.Len())
			nb = append(nb, body...)
			if len(nb) > 0 && !bytes.HasSuffix(nb, []byte("\n\n")) {
				// A hand edit dropped the separator: restore it so the
				// next header starts a line of its own.
				if !bytes.HasSuffix(nb, []byte("\n")) {
					nb = append(nb, '\n')
				}
				nb = append(nb, '\n')
			}
			d.SetBody(append(nb, buf.Bytes()...))
			return st.setFields(d, st.count == len(added))
		})
		if err != nil {
			return nil, err
		}
		ids = append(ids, added...)
	}
	for len(pending) > 0 {
		last, lastTime := st.lastID, st.lastTime
		st = chunkState{lastID: last, lastTime: lastTime}
		var buf bytes.Buffer
		var added []string
		added, pending = st.fill(&buf, channel, sender, pending, size, 0)
		rel, err := schema.Chunk.Path(channel+"/"+st.firstID, nil)
		if err != nil {
			return nil, err
		}
		d, err := docstore.New(schema.Chunk, []docstore.Field{
			{Key: schema.VersionField, Value: schema.Chunk.Version},
			{Key: "id", Value: st.firstID},
			{Key: "channel", Value: channel},
			{Key: "first_id", Value: st.firstID},
			{Key: "last_id", Value: st.lastID},
			{Key: "first_time", Value: st.firstTime},
			{Key: "last_time", Value: st.lastTime},
			{Key: "message_count", Value: st.count},
			{Key: "created", Value: st.firstTime},
			{Key: "updated", Value: st.lastTime},
		}, append([]byte("\n"), buf.Bytes()...))
		if err != nil {
			return nil, err
		}
		if err := s.Create(rel, d); err != nil {
			return nil, err
		}
		ids = append(ids, added...)
	}
	return ids, nil
}

func chunkSize(s *docstore.Store) int {
	if d, err := cachedGet(s, docstore.ConfigFile); err == nil {
		if n, ok := d.Int("chunk_size"); ok && n > 0 {
			return int(n)
		}
	}
	return DefaultChunkSize
}

// chunkState is what an append needs to know about the open chunk.
type chunkState struct {
	count     int
	firstID   string
	firstTime time.Time
	lastID    string
	lastTime  time.Time
}

func stateOf(msgs []Message) chunkState {
	var st chunkState
	if len(msgs) > 0 {
		st.count = len(msgs)
		st.firstID, st.firstTime = msgs[0].ID, msgs[0].Time.Time
		last := msgs[len(msgs)-1]
		st.lastID, st.lastTime = last.ID, last.Time.Time
	}
	return st
}

// fill renders texts into buf as new messages of the chunk while it has
// room (count, ChunkSpan, maxChunkBytes; an empty chunk always takes one),
// and returns the ids added and the texts left over.
func (st *chunkState) fill(buf *bytes.Buffer, channel, sender string, texts []string, size, baseLen int) (ids, rest []string) {
	for len(texts) > 0 {
		now := time.Now().UTC().Truncate(time.Millisecond)
		if now.Before(st.lastTime) {
			now = st.lastTime // clocks step back; times in a channel never do
		}
		if st.count >= size || (st.count > 0 && now.Sub(st.firstTime) >= ChunkSpan) {
			break
		}
		m := Message{ID: nextID(st.lastID), Channel: channel, Sender: sender, Time: schema.TimeOf(now), Text: texts[0]}
		mark := buf.Len()
		renderMessage(buf, m)
		if st.count > 0 && baseLen+buf.Len() > maxChunkBytes {
			buf.Truncate(mark)
			break
		}
		if st.count == 0 {
			st.firstID, st.firstTime = m.ID, m.Time.Time
		}
		st.count++
		st.lastID, st.lastTime = m.ID, m.Time.Time
		ids = append(ids, m.ID)
		texts = texts[1:]
	}
	return ids, texts
}

// setFields records the chunk's state in its frontmatter. Only the fields
// an append changes are set, each Set being a re-parse of the frontmatter.
func (st *chunkState) setFields(d *docstore.Doc, wasEmpty bool) error {
	if wasEmpty { // a chunk emptied by hand
		if err := d.Set("first_id", st.firstID); err != nil {
			return err
		}
		if err := d.Set("first_time", st.firstTime); err != nil {
			return err
		}
	}
	if err := d.SetMany([]docstore.Field{
		{Key: "last_id", Value: st.lastID},
		{Key: "last_time", Value: st.lastTime},
		{Key: "message_count", Value: st.count},
		{Key: "updated", Value: st.lastTime},
	}); err != nil {
		return err
	}
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

// CheckChunk is the check `tavern check` runs on a message chunk beyond
// its frontmatter (docstore.Store.AddCheck): a message section that does
// not parse (a header without its id line) is a *docstore.ParseError at
// its line. recv refuses such a chunk, so check must not call it valid.
// Nor a message_count that is not the number of its messages.
func CheckChunk(d *docstore.Doc) []error {
	if d.Kind != schema.Chunk {
		return nil
	}
	msgs, err := chunkMessages(d)
	if err != nil {
		return []error{err}
	}
	// A message removed or added by hand: inbox counts unread messages
	// from message_count without parsing the chunk, so a stale one
	// miscounts until it is set right.
	if n, ok := d.Int("message_count"); ok && int(n) != len(msgs) {
		held := fmt.Sprintf("%d messages", len(msgs))
		if len(msgs) == 1 {
			held = "1 message"
		}
		return []error{&docstore.ParseError{Path: d.Path, Line: d.KeyLine("message_count"), Col: 1,
			Msg: fmt.Sprintf("message_count is %d, but the chunk holds %s (edited by hand?): inbox counts from it; set it to %d", n, held, len(msgs))}}
	}
	return nil
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
	msgs, _, err := readMessages(s, channel, after, nil, "", limit)
	return msgs, err
}

// readMessages returns the messages of channel with an id greater than
// after or in also, in id order, at most limit; cut says the limit left
// some out. Chunks of two machines that wrote to the channel between two
// syncs overlap in time (each machine's chunk holds its own messages), so
// every chunk that may hold a message past the floor is read and the
// result sorted: a chunk holds messages of at most ChunkSpan from its
// first (its name), which bounds how far back that is. The messages of
// own (a reader, fromReader; "" for none) are returned but not counted
// in limit: a recv passes over them.
func readMessages(s *docstore.Store, channel, after string, also map[string]bool, own string, limit int) (out []Message, cut bool, err error) {
	if err := ValidChannel(channel); err != nil {
		return nil, false, err
	}
	chunks, err := chunkFiles(s, channel)
	if err != nil {
		return nil, false, err
	}
	floor := after
	for id := range also {
		if id < floor {
			floor = id
		}
	}
	byID := func() {
		sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	}
	// nth is the index of the limit-th message of out not own's, or -1.
	nth := func() int {
		k := 0
		for i, m := range out {
			if own == "" || !fromReader(m, own) {
				if k++; k == limit {
					return i
				}
			}
		}
		return -1
	}
	start := firstChunk(chunks, floor)
	for i, c := range chunks[start:] {
		d, err := s.Get(c)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return out, false, err
		}
		msgs, err := chunkMessages(d)
		if err != nil {
			return out, false, err
		}
		for _, m := range msgs {
			if m.ID > after || also[m.ID] {
				out = append(out, m)
			}
		}
		if limit > 0 && len(out) >= limit {
			// A later chunk holds only ids from its name on: once the
			// limit is met below that, nothing later can come first.
			byID()
			if k := nth(); k >= 0 {
				rest := chunks[start+i+1:]
				if len(rest) == 0 || chunkName(rest[0]) > out[k].ID {
					return out[:k+1], len(out) > k+1 || len(rest) > 0, nil
				}
			}
		}
	}
	byID()
	if limit > 0 {
		if k := nth(); k >= 0 && len(out) > k+1 {
			return out[:k+1], true, nil
		}
	}
	return out, false, nil
}

// firstChunk is the index of the first chunk that may hold a message with
// an id greater than floor: the one holding floor (the last named at or
// before it), or an earlier one named less than ChunkSpan (and a minute
// of slack) before floor, which another machine may have filled at the
// same time.
func firstChunk(chunks []string, floor string) int {
	if floor == "" {
		return 0
	}
	bound, ok := idBefore(floor, ChunkSpan+time.Minute)
	if !ok {
		return 0
	}
	start := 0
	for i, c := range chunks {
		if chunkName(c) > floor {
			break
		}
		start = i
	}
	for start > 0 && chunkName(chunks[start-1]) >= bound {
		start--
	}
	return start
}

// idBefore is the text every UUIDv7 made d before id's time sorts at or
// after: its time prefix ("xxxxxxxx-xxxx"). ok is false for an id that
// is no UUIDv7 (a hand-named chunk): then everything must be read.
func idBefore(id string, d time.Duration) (string, bool) {
	if len(id) < 13 || id[8] != '-' {
		return "", false
	}
	ms, err := strconv.ParseUint(id[:8]+id[9:13], 16, 64)
	if err != nil {
		return "", false
	}
	t := int64(ms) - d.Milliseconds()
	if t < 0 {
		t = 0
	}
	h := fmt.Sprintf("%012x", t)
	return h[:8] + "-" + h[8:], true
}

// AllMessages returns every message of channel, oldest first, for a
// search (agents.Context, the kit's search). A chunk that does not parse
// hides no other chunk's messages: it is skipped, and the messages are
// returned with a *docstore.SkippedError naming each such chunk
// (path:line:col). ReadMessages stops at such a chunk instead: recv
// moves a bookmark past what it returns, and a skipped chunk's messages
// would be lost to it for good.
func AllMessages(s *docstore.Store, channel string) ([]Message, error) {
	if err := ValidChannel(channel); err != nil {
		return nil, err
	}
	chunks, err := chunkFiles(s, channel)
	if err != nil {
		return nil, err
	}
	var out []Message
	var bad []error
	for _, c := range chunks {
		d, err := s.Get(c)
		if err == nil {
			var msgs []Message
			if msgs, err = chunkMessages(d); err == nil {
				out = append(out, msgs...)
				continue
			}
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Gone since the directory was read (merged away).
		case badFile(err):
			bad = append(bad, err)
		default:
			return out, err
		}
	}
	return out, skipped(bad)
}

// countMessages counts a channel's messages from the chunks' frontmatter.
// A chunk that does not parse is left out of the count and returned in
// bad; the others still count.
func countMessages(s *docstore.Store, channel string) (n int, bad []error, err error) {
	chunks, err := chunkFiles(s, channel)
	if err != nil {
		return 0, nil, err
	}
	for _, c := range chunks {
		d, err := s.Get(c)
		if err != nil {
			if !badFile(err) {
				return n, bad, err
			}
			bad = append(bad, err)
			continue
		}
		k, _ := d.Int("message_count")
		n += int(k)
	}
	return n, bad, nil
}

// countAfter counts the messages of channel with an id greater than after
// or in late (the bookmark's late ids) that are not reader's own
// (fromReader), parsing only the chunks that may hold after or a late id
// (firstChunk) and trusting message_count of the chunks past it that do
// not name the reader in a header (most: a reader is rarely the sender).
// A late id is counted only if its message is there and is not the
// reader's: a marker an older sync wrote may name the reader's own, and
// recv passes over both. A chunk that does not parse is left out of the
// count and returned in bad (a count is a hint; recv stops at such a
// chunk).
func countAfter(s *docstore.Store, channel, reader, after string, late []string) (n int, last string, bad []error, err error) {
	chunks, err := chunkFiles(s, channel)
	if err != nil {
		return 0, "", nil, err
	}
	floor := after
	also := make(map[string]bool, len(late))
	for _, id := range late {
		if id <= after { // a later one is counted as any message past after
			also[id] = true
			floor = min(floor, id)
		}
	}
	for _, c := range chunks[firstChunk(chunks, floor):] {
		d, err := s.Get(c)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // merged away since the directory was read
			}
			if badFile(err) {
				bad = append(bad, err)
				continue
			}
			return n, last, bad, err
		}
		if l := d.String("last_id"); l > last {
			last = l
		}
		whole := after == "" || chunkName(c) > after
		if whole && (reader == "" || !bytes.Contains(d.Body(), []byte(senderSep+reader))) {
			k, _ := d.Int("message_count")
			n += int(k)
			continue
		}
		if l := d.String("last_id"); !whole && l != "" && l <= after && (len(also) == 0 || l < floor) {
			continue // read up to its end, and no late id in it: no need to parse its messages
		}
		msgs, err := chunkMessages(d)
		if err != nil {
			if badFile(err) || errors.Is(err, ErrBadChunk) {
				bad = append(bad, err)
				continue
			}
			return n, last, bad, err
		}
		for _, m := range msgs {
			if (m.ID > after || also[m.ID]) && !fromReader(m, reader) {
				n++
			}
		}
	}
	return n, last, bad, nil
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

// validSender checks a message sender: an agent name, optionally with a
// ":stream" suffix (the spawn wrapper's "alice:stderr"). ':' is never part
// of an agent name, so the suffixed form cannot collide with an agent.
func validSender(sender string) error {
	name, stream, suffixed := strings.Cut(sender, ":")
	if err := schema.ValidAgentName(name); err != nil {
		return fmt.Errorf("sender: %w", err)
	}
	if suffixed && schema.ValidAgentName(stream) != nil {
		return fmt.Errorf("sender %q: %w", sender, &schema.NameError{Name: stream, Reason: "a stream suffix is lower-case letters and digits"})
	}
	return nil
}
