package messages

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// Channel is a channel document (channels/<name>.md).
type Channel struct {
	Name     string           `json:"name"`
	Topic    string           `json:"topic,omitempty"`
	Archived bool             `json:"archived"`
	Created  schema.Timestamp `json:"created"`
	Path     string           `json:"path"`
	// Messages is filled in by ListChannels: the sum of its chunks'
	// message_count.
	Messages int `json:"messages"`
}

// DirectChannel is the channel of direct messages to agent: "@agent".
func DirectChannel(agent string) string { return "@" + agent }

// person is the reader who runs the project without naming an agent
// (agents.Person): it may read every channel.
const person = "user"

// CanRead is the one rule of who reads a channel: a direct channel "@B"
// is B's, read by B, by B's ancestors (its parent, the parent's parent...:
// a lead reads the output of the agents it spawned, which spawn writes to
// their direct channels) and by the person ("user", or "" for a caller
// that names nobody), who runs the project and can cat its files anyway;
// every other channel is anyone's. It covers the channel's messages and
// its notes: Recv, RecvEach, RecvWait and ListNotes refuse what it denies
// (*DirectError), and searches skip it. (Inbox lists fewer: only the
// reader's own direct channel, the person's too.)
func CanRead(s *docstore.Store, reader, channel string) bool {
	agent, direct := strings.CutPrefix(channel, "@")
	return !direct || reader == "" || reader == person || reader == agent || ancestor(s, reader, agent)
}

// CheckRead refuses reader (op: "show", "edit", ...) the document at rel
// when it is a note or a message chunk of a channel CanRead denies it
// (*DirectError): commands that read any document by its path (show, ls,
// edit, trace --at) hold the rule recv and notes hold. Other documents,
// a channel's own document among them, are nil.
func CheckRead(s *docstore.Store, op, reader, rel string) error {
	channel := PathChannel(rel)
	if channel == "" {
		return nil
	}
	return checkReader(s, op, reader, channel)
}

// PathChannel is the channel whose note or message chunk is at rel (or
// under rel, a directory: notes/@bob/), or "".
func PathChannel(rel string) string {
	parts := strings.SplitN(strings.TrimPrefix(path.Clean(filepath.ToSlash(rel)), "./"), "/", 3)
	if len(parts) < 2 || (parts[0] != schema.Note.Dir() && parts[0] != schema.Chunk.Dir()) {
		return ""
	}
	return parts[1]
}

// checkReader refuses a read (op) of channel by reader that CanRead
// denies.
func checkReader(s *docstore.Store, op, reader, channel string) error {
	if CanRead(s, reader, channel) {
		return nil
	}
	rel, _ := channelPath(channel)
	return &DirectError{Op: op, Path: rel, Channel: channel, Reader: reader}
}

// ValidChannel reports whether name may be a channel: a path-safe name
// without white space, so it works as a directory name and in a shell. A
// leading "@" marks a direct-message channel; the rest must then be a valid
// agent name. The rule is schema.ValidChannel (the channel's lock of a
// file, schema.ChannelOfFile, needs it below this package).
func ValidChannel(name string) error { return schema.ValidChannel(name) }

func channelPath(name string) (string, error) {
	if err := ValidChannel(name); err != nil {
		return "", err
	}
	return schema.Channel.Path(name, nil)
}

func messagesDir(name string) string { return "messages/" + name }

// CreateOptions are CreateChannelWith's options.
type CreateOptions struct {
	// New makes the channel though its name is near an existing
	// channel's (schema.NearNew): `channel create --new`.
	New bool
}

// CreateChannel creates channels/<name>.md. It fails with ErrExist (from
// docstore) if the channel exists. A direct channel ("@agent") is an
// agent's: one for an agent that does not exist (a typo, "@bbo") is a
// *schema.UnknownError for the agent, and nothing is created. A name
// near an existing channel's (gne beside gen) is a *ChannelError
// (ErrNearChannel), as token init and budget set refuse one: most likely
// a typo, which would split the conversation in two. CreateChannelWith
// with New makes it anyway.
func CreateChannel(s *docstore.Store, name, topic string) (*Channel, error) {
	return CreateChannelWith(s, name, topic, CreateOptions{})
}

// CreateChannelWith is CreateChannel with options.
func CreateChannelWith(s *docstore.Store, name, topic string, opt CreateOptions) (*Channel, error) {
	rel, err := channelPath(name)
	if err != nil {
		return nil, err
	}
	if agent, ok := strings.CutPrefix(name, "@"); ok && agent != person && !exists(s, "agents/"+agent+".md") {
		var agents []string
		ents, _ := os.ReadDir(filepath.Join(s.Root(), "agents"))
		for _, e := range ents {
			if a, ok := strings.CutSuffix(e.Name(), ".md"); ok {
				agents = append(agents, a)
			}
		}
		return nil, &schema.UnknownError{What: "agent", Name: agent, Near: schema.Near(agent, agents)}
	}
	// Gen beside gen: one file on a case-insensitive file system (macOS,
	// Windows), and a typo everywhere else.
	names, _ := s.Names(schema.Channel.Dir())
	for _, n := range names {
		if other, ok := strings.CutSuffix(n, ".md"); ok && other != name && strings.EqualFold(other, name) {
			return nil, &fs.PathError{Op: "create", Path: rel, Err: fmt.Errorf("%w: channel %q differs from it only in case (the same file on a case-insensitive file system)", docstore.ErrExist, other)}
		}
	}
	// A direct channel is judged by its agent (above); numbered names
	// (team-2 beside team-1) are a series (NearNew leaves them out).
	if !opt.New && !strings.HasPrefix(name, "@") && !exists(s, rel) {
		var others []string
		for _, n := range names {
			if n, ok := strings.CutSuffix(n, ".md"); ok && !strings.HasPrefix(n, "@") && ValidChannel(n) == nil {
				others = append(others, n)
			}
		}
		if near := schema.NearNew(name, others); len(near) > 0 {
			return nil, &ChannelError{Op: "create", Path: rel, Channel: name, Near: near}
		}
	}
	return createChannel(s, rel, name, topic)
}

// createChannel creates the channel document rel of name; the first
// message to a direct channel makes it this way (ensureChannel), its
// agent checked by the caller (CheckChannel).
func createChannel(s *docstore.Store, rel, name, topic string) (*Channel, error) {
	now := time.Now()
	d, err := docstore.New(schema.Channel, []docstore.Field{
		{Key: schema.VersionField, Value: schema.Channel.Version},
		{Key: "id", Value: docstore.NewID()},
		{Key: "name", Value: name},
		{Key: "topic", Value: topic},
		{Key: "archived", Value: false},
		{Key: "created", Value: now},
		{Key: "updated", Value: now},
	}, []byte("\n"))
	if err != nil {
		return nil, err
	}
	if err := s.Create(rel, d); err != nil {
		return nil, err
	}
	return channelOf(d), nil
}

// ensureChannel returns the channel document, creating it if it does not
// exist (the first message to a channel creates it, so `send @bob` works
// without ceremony).
func ensureChannel(s *docstore.Store, name string) (*docstore.Doc, error) {
	rel, err := channelPath(name)
	if err != nil {
		return nil, err
	}
	d, err := cachedGet(s, rel)
	if err == nil {
		return d, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if _, err := createChannel(s, rel, name, ""); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	return cachedGet(s, rel)
}

// EnsureChannel gives channel name its document if it has none and
// CheckChannel accepts it, as the first send to it does (ensureChannel):
// in practice an existing agent's direct channel ("@alice") that has
// never been sent a message. A channel CheckChannel refuses gets its
// error and nothing is made.
func EnsureChannel(s *docstore.Store, name string) error {
	if err := CheckChannel(s, name); err != nil {
		return err
	}
	_, err := ensureChannel(s, name)
	return err
}

// docCache holds parsed documents that are read on every send (tavern.md,
// channel documents), keyed by file identity. Every engine write replaces
// the file by rename, so a new version has a new inode; size and mtime
// catch in-place edits. Cached documents are shared: read only.
var docCache sync.Map // absolute path -> cachedDoc

type cachedDoc struct {
	ino, dev uint64
	size     int64
	mtime    int64
	doc      *docstore.Doc
}

func cachedGet(s *docstore.Store, rel string) (*docstore.Doc, error) {
	abs, err := s.Abs(rel)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return s.Get(rel) // the store's error, with its path
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return s.Get(rel)
	}
	key := cachedDoc{ino: st.Ino, dev: uint64(st.Dev), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if v, ok := docCache.Load(abs); ok {
		c := v.(cachedDoc)
		if c.ino == key.ino && c.dev == key.dev && c.size == key.size && c.mtime == key.mtime {
			return c.doc, nil
		}
	}
	d, err := s.Get(rel)
	if err != nil {
		return nil, err
	}
	key.doc = d
	docCache.Store(abs, key)
	return d, nil
}

func channelOf(d *docstore.Doc) *Channel {
	c := &Channel{Name: d.Name, Topic: d.String("topic"), Archived: d.Bool("archived"), Path: d.Path}
	c.Created.Time, _ = d.Time("created")
	return c
}

// GetChannel reads one channel.
func GetChannel(s *docstore.Store, name string) (*Channel, error) {
	rel, err := channelPath(name)
	if err != nil {
		return nil, err
	}
	d, err := s.Get(rel)
	if err != nil {
		return nil, err
	}
	return channelOf(d), nil
}

// ListChannels returns the channels sorted by name: the channel
// documents. A message directory without a document is not a channel (it
// has no creation time, no topic, and nobody created it on purpose):
// Findings reports it for `tavern doctor`. Archived channels are left out
// unless all is set. A channel document or message chunk that does not
// parse hides nothing else: the document is left out (a chunk, out of its
// channel's count) and the list is returned with a *docstore.SkippedError
// naming each such file (path:line:col), as AllChannels does. Any other
// error is returned alone.
func ListChannels(s *docstore.Store, all bool) ([]*Channel, error) {
	out, errs := channelDocs(s, all)
	var bad []error
	for _, err := range errs {
		if !badFile(err) {
			return nil, err
		}
		bad = append(bad, err)
	}
	for _, c := range out {
		n, chunkErrs, err := countMessages(s, c.Name)
		if err != nil {
			return nil, err
		}
		bad = append(bad, chunkErrs...)
		c.Messages = n
	}
	return out, skipped(bad)
}

// channelDocs reads the channel documents, sorted by name, archived ones
// only if all is set, with an error per document that could not be read.
func channelDocs(s *docstore.Store, all bool) ([]*Channel, []error) {
	docs, errs := s.List(schema.Channel)
	var out []*Channel
	for _, d := range docs {
		c := channelOf(d)
		if c.Archived && !all {
			continue
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errs
}

// AllChannels returns every channel, archived ones included, sorted by
// name, for a search that reads their messages and notes itself
// (agents.Context, the kit's search): Messages is left 0, as counting
// would read every chunk once more. A channel document that does not
// parse hides no other channel: it is skipped, and the list is returned
// with a *docstore.SkippedError naming each such file (path:line:col),
// as ListNotes does. Any other error is returned alone.
func AllChannels(s *docstore.Store) ([]*Channel, error) {
	out, errs := channelDocs(s, true)
	var bad []error
	for _, err := range errs {
		if !badFile(err) {
			return nil, err
		}
		bad = append(bad, err)
	}
	return out, skipped(bad)
}

// ArchiveChannel marks a channel archived: it leaves active lists and
// refuses new messages; its messages are kept. A channel with no document
// is a *schema.UnknownError (nothing is written).
func ArchiveChannel(s *docstore.Store, name string) error {
	rel, err := channelPath(name)
	if err != nil {
		return err
	}
	_, err = s.Update(rel, func(d *docstore.Doc) error {
		if err := d.Set("archived", true); err != nil {
			return err
		}
		return d.Set("updated", time.Now())
	})
	if errors.Is(err, docstore.ErrNotExist) {
		// A typo: said as every command says an unknown channel.
		if cerr := CheckChannel(s, name); cerr != nil {
			return cerr
		}
	}
	return err
}

// CheckChannel returns nil if channel exists: it has a channel document,
// or it is the direct channel "@NAME" of an agent that has a document (or
// of the person, "@user"). Otherwise it returns a *schema.UnknownError
// with the nearest channel names: a typo never creates a channel
// (CreateChannel does, or Send with Create). A message directory alone
// is no channel (ListChannels).
func CheckChannel(s *docstore.Store, name string) error {
	rel, err := channelPath(name)
	if err != nil {
		return err
	}
	if exists(s, rel) {
		return nil
	}
	if agent, ok := strings.CutPrefix(name, "@"); ok && (agent == person || exists(s, "agents/"+agent+".md")) {
		return nil
	}
	return &schema.UnknownError{What: "channel", Name: name, Near: schema.Near(name, channelNames(s))}
}

func exists(s *docstore.Store, rel string) bool {
	abs, err := s.Abs(rel)
	if err != nil {
		return false
	}
	_, err = os.Stat(abs)
	return err == nil
}

// channelNames lists the names a channel could be meant as: channel
// documents and the agents' direct channels.
func channelNames(s *docstore.Store) []string {
	var out []string
	for _, dir := range []string{"channels", "agents"} {
		ents, _ := os.ReadDir(filepath.Join(s.Root(), dir))
		for _, e := range ents {
			n := e.Name()
			switch dir {
			case "channels":
				n, _ = strings.CutSuffix(n, ".md")
			case "agents":
				n = "@" + strings.TrimSuffix(n, ".md")
			}
			if ValidChannel(n) == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// ancestor reports whether reader is agent's parent, or its parent's,
// following the parent fields of agents/NAME.md (a cycle or a chain
// longer than 32 ends the walk).
func ancestor(s *docstore.Store, reader, agent string) bool {
	for range 32 {
		d, err := s.Get("agents/" + agent + ".md")
		if err != nil {
			return false
		}
		agent = d.String("parent")
		if agent == "" {
			return false
		}
		if agent == reader {
			return true
		}
	}
	return false
}

// OwnerChannelFiles is the docstore.Owner by which a channel owns its
// messages (messages/<name>/) and notes (notes/<name>/): `tavern rm` of
// the channel moves them to .trash/ with it, and `tavern trash restore`
// of the channel brings them back. Left behind they were a channel
// without its document, which `tavern doctor --fix` made again: the rm
// undone.
const OwnerChannelFiles = "messages/channel-files"

// ChannelFiles lists the files channel document d owns: those in its
// messages and notes directories, and those of its paths in .trash/
// (what a removal of it took, for a restore to bring back).
func ChannelFiles(s *docstore.Store, d *docstore.Doc) []string {
	if d.Kind != schema.Channel {
		return nil
	}
	name, ok := strings.CutSuffix(strings.TrimPrefix(d.Path, schema.Channel.Dir()+"/"), ".md")
	if !ok || ValidChannel(name) != nil {
		return nil
	}
	dirs := []string{messagesDir(name) + "/", schema.Note.Dir() + "/" + name + "/"}
	var out []string
	for _, dir := range dirs {
		ents, _ := os.ReadDir(filepath.Join(s.Root(), filepath.FromSlash(dir)))
		for _, e := range ents {
			if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".md") {
				out = append(out, dir+e.Name())
			}
		}
	}
	trash, _ := s.Trash()
	for _, e := range trash {
		for _, dir := range dirs {
			if strings.HasPrefix(e.Path, dir) && !strings.Contains(e.Path[len(dir):], "/") && !slices.Contains(out, e.Path) {
				out = append(out, e.Path)
			}
		}
	}
	return out
}

// ChannelLocks is the docstore.Locker of a channel's files (its
// document, message chunks and notes): the channel's lock
// (schema.ChannelLockKey), which senders hold while they check the
// channel and write to it. An rm of the channel holds it until its
// messages and notes have gone to the trash with it (DeleteAll), so a
// send lands before the rm, and goes with it, or after it, and is
// refused (no such channel): it never makes the channel again half way
// through the removal, nor leaves a chunk of it behind.
func ChannelLocks(rel string) []string {
	if ch := schema.ChannelOfFile(rel); ch != "" {
		return []string{schema.ChannelLockKey(ch)}
	}
	return nil
}
