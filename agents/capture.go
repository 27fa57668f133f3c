package agents

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher"
)

// OutputMessage is one captured line (or message) for a channel.
type OutputMessage struct {
	ID     string
	Time   time.Time
	Sender string
	Text   string
}

// AppendMessages appends messages to a channel's chunks. It is the one
// place the spawn wrapper writes message chunks, so the messaging package
// code can replace it; until then it follows the chunk format of the
// messaging design: messages/<channel>/<chunk>.md, a chunk named by its
// first message id holding up to chunk_size (tavern.md) messages or one
// hour, one "### <time> — <sender>" section per message with its id.
// Appends to one channel are serialised by the lock "messages/<channel>".
var AppendMessages = appendChunkMessages

func appendChunkMessages(m *Manager, channel string, msgs []OutputMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	if err := schema.ValidName(channel); err != nil {
		return err
	}
	l, err := m.Store.Lock("messages/" + channel)
	if err != nil {
		return err
	}
	defer l.Unlock()
	size := m.chunkSize()
	paths, err := m.Store.ListFiles(schema.Chunk)
	if err != nil {
		return err
	}
	prefix := "messages/" + channel + "/"
	var last string
	for _, p := range paths {
		if strings.HasPrefix(p, prefix) {
			last = p // sorted: chunk names are time-ordered ids
		}
	}
	for len(msgs) > 0 {
		var cur *docstore.Doc
		count := 0
		if last != "" {
			if cur, err = m.Store.Get(last); err != nil {
				return err
			}
			n, _ := cur.Int("message_count")
			count = int(n)
			first, _ := cur.Time("first_time")
			if count >= size || (!first.IsZero() && msgs[0].Time.Sub(first) >= time.Hour) {
				cur = nil
			}
		}
		take := min(len(msgs), size-count)
		if cur == nil {
			take = min(len(msgs), size)
		}
		batch := msgs[:take]
		msgs = msgs[take:]
		var body bytes.Buffer
		for _, msg := range batch {
			fmt.Fprintf(&body, "\n### %s — %s\n<!-- id: %s -->\n\n%s\n", schema.FormatTime(msg.Time), msg.Sender, msg.ID, escapeHeadings(msg.Text))
		}
		lastMsg := batch[len(batch)-1]
		if cur == nil {
			now := m.now()
			d, err := docstore.New(schema.Chunk, [][2]any{
				{schema.VersionField, schema.Chunk.Version}, {"id", batch[0].ID}, {"channel", channel},
				{"first_id", batch[0].ID}, {"last_id", lastMsg.ID}, {"first_time", batch[0].Time},
				{"last_time", lastMsg.Time}, {"message_count", len(batch)}, {"created", now}, {"updated", now},
			}, append([]byte("\n## Messages\n"), body.Bytes()...))
			if err != nil {
				return err
			}
			last = prefix + batch[0].ID + ".md"
			if err := m.Store.Create(last, d); err != nil {
				return err
			}
			continue
		}
		if _, err := m.Store.UpdateHeld(l, last, func(d *docstore.Doc) error {
			d.SetBody(append(append([]byte(nil), d.Body()...), body.Bytes()...))
			for _, kv := range [][2]any{{"last_id", lastMsg.ID}, {"last_time", lastMsg.Time}, {"message_count", count + len(batch)}, {"updated", m.now()}} {
				if err := d.Set(kv[0].(string), kv[1]); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// escapeHeadings keeps captured text from opening a new message section.
func escapeHeadings(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "#") {
			lines[i] = `\` + l
		}
	}
	return strings.Join(lines, "\n")
}

func (m *Manager) chunkSize() int {
	if cfg, err := m.Store.Get(docstore.ConfigFile); err == nil {
		if n, ok := cfg.Int("chunk_size"); ok && n > 0 {
			return int(n)
		}
	}
	return 100
}

// AgentChannel is the direct-message channel of an agent; the spawn
// wrapper captures the agent's output there.
func AgentChannel(agent string) string { return "@" + agent }

// capture collects lines from a child's stdout and stderr and flushes them
// to the agent's channel in batches (every flushEvery, or when many lines
// are waiting), so a chatty child costs a chunk write per batch, not per
// line. It keeps the last lines of each stream for the item's result and
// error and the agent's Recent Messages.
type capture struct {
	m       *Manager
	channel string
	agent   string
	tee     map[string]io.Writer // stream -> terminal

	mu      sync.Mutex
	pending []OutputMessage
	tails   map[string][]string // stream -> last lines
	recent  []OutputMessage
	err     error
	kick    chan struct{}
	done    chan struct{}
	wg      sync.WaitGroup
}

const (
	flushEvery  = 200 * time.Millisecond
	flushLines  = 256
	keepTail    = 20
	keepRecent  = 10
	maxLineSize = 64 << 10
)

func newCapture(m *Manager, agent string, tee map[string]io.Writer) *capture {
	c := &capture{m: m, channel: AgentChannel(agent), agent: agent, tee: tee,
		tails: map[string][]string{}, kick: make(chan struct{}, 1), done: make(chan struct{})}
	c.wg.Add(1)
	go c.flusher()
	return c
}

// stream returns a writer for one stream ("stdout", "stderr") and a
// function that waits until everything written to it has been captured.
func (c *capture) stream(name string) (io.WriteCloser, func()) {
	pr, pw := io.Pipe()
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 0, 4096), maxLineSize)
		for sc.Scan() {
			c.line(name, sc.Text())
		}
		if err := sc.Err(); err != nil {
			// An over-long line: keep reading the rest so the child never blocks.
			c.line(name, "[line longer than 64 KiB truncated]")
			_, _ = io.Copy(io.Discard, pr)
		}
	}()
	return pw, func() { <-finished }
}

func (c *capture) line(stream, text string) {
	if w := c.tee[stream]; w != nil {
		fmt.Fprintln(w, text)
	}
	sender := c.agent
	if stream != "stdout" {
		sender += " (" + stream + ")"
	}
	msg := OutputMessage{ID: docstore.NewID(), Time: c.m.now(), Sender: sender, Text: text}
	c.mu.Lock()
	c.pending = append(c.pending, msg)
	t := append(c.tails[stream], text)
	if len(t) > keepTail {
		t = t[len(t)-keepTail:]
	}
	c.tails[stream] = t
	c.recent = append(c.recent, msg)
	if len(c.recent) > keepRecent {
		c.recent = c.recent[len(c.recent)-keepRecent:]
	}
	n := len(c.pending)
	c.mu.Unlock()
	if n >= flushLines {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

func (c *capture) flusher() {
	defer c.wg.Done()
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			c.flush()
			return
		case <-t.C:
		case <-c.kick:
		}
		c.flush()
	}
}

func (c *capture) flush() {
	c.mu.Lock()
	batch := c.pending
	c.pending = nil
	c.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	if err := AppendMessages(c.m, c.channel, batch); err != nil {
		c.mu.Lock()
		if c.err == nil {
			c.err = err
		}
		c.mu.Unlock()
	}
}

// close flushes what is left and stops the flusher.
func (c *capture) close() error {
	close(c.done)
	c.wg.Wait()
	return c.err
}

func (c *capture) tail(stream string, n int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tails[stream]
	if len(t) > n {
		t = t[len(t)-n:]
	}
	return append([]string(nil), t...)
}

// recentSection renders the last captured lines for the agent's Recent
// Messages section.
func (c *capture) recentSection() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, msg := range c.recent {
		fmt.Fprintf(&b, "- %s %s: %s\n", msg.Time.UTC().Format("15:04:05"), msg.Sender, strings.ReplaceAll(msg.Text, "\n", " "))
	}
	if b.Len() > 0 {
		fmt.Fprintf(&b, "\nFull history: `tavern show messages/%s/...` (messages/%s/).", c.channel, c.channel)
	}
	return b.String()
}

// ChannelMessages reads every message of a channel written in the chunk
// format above, oldest first (for tests and `tavern agent log`).
func (m *Manager) ChannelMessages(channel string) ([]OutputMessage, error) {
	paths, err := m.Store.ListFiles(schema.Chunk)
	if err != nil {
		return nil, err
	}
	prefix := "messages/" + channel + "/"
	var out []OutputMessage
	for _, p := range paths {
		if !strings.HasPrefix(p, prefix) {
			continue
		}
		d, err := m.Store.Get(p)
		if err != nil {
			return out, err
		}
		out = append(out, parseChunkBody(d.Body())...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func parseChunkBody(body []byte) []OutputMessage {
	var out []OutputMessage
	var cur *OutputMessage
	var text []string
	finish := func() {
		if cur != nil {
			cur.Text = strings.TrimSpace(strings.Join(text, "\n"))
			out = append(out, *cur)
		}
		cur, text = nil, nil
	}
	for _, l := range strings.Split(string(body), "\n") {
		if h, ok := strings.CutPrefix(l, "### "); ok {
			finish()
			ts, sender, _ := strings.Cut(h, " — ")
			t, _ := schema.ParseTime(ts)
			cur = &OutputMessage{Time: t, Sender: sender}
			continue
		}
		if cur == nil {
			continue
		}
		if id, ok := strings.CutPrefix(l, "<!-- id: "); ok && cur.ID == "" {
			cur.ID = strings.TrimSuffix(id, " -->")
			continue
		}
		if strings.HasPrefix(l, `\#`) {
			l = l[1:]
		}
		text = append(text, l)
	}
	finish()
	return out
}

// journalOutputError records a capture failure; output loss must be visible.
func (m *Manager) journalOutputError(agent string, err error) error {
	return m.event(watcher.Event{Type: "agent.output_error", Kind: "agent", Path: AgentPath(agent), Agent: agent,
		Data: map[string]any{"error": err.Error()}})
}
