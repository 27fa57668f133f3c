package agents

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/watcher/journal"
)

// OutputMessage is one captured line (or message) for a channel.
type OutputMessage struct {
	ID     string
	Time   time.Time
	Sender string
	Text   string
}

// appendMessages appends captured lines to a channel: the spawn wrapper's
// one way into message chunks (SendMessages, one call per run of lines
// from the same stream, so a batch costs one chunk write). Blank lines are
// not messages and are skipped.
func appendMessages(m *Manager, channel string, msgs []OutputMessage) error {
	var errs []error
	for i := 0; i < len(msgs); {
		j := i
		var texts []string
		for ; j < len(msgs) && msgs[j].Sender == msgs[i].Sender; j++ {
			if strings.TrimSpace(msgs[j].Text) != "" {
				texts = append(texts, msgs[j].Text)
			}
		}
		if len(texts) > 0 {
			if _, err := messages.SendMessages(m.Store, channel, msgs[i].Sender, texts); err != nil {
				errs = append(errs, err)
			}
		}
		i = j
	}
	return errors.Join(errs...)
}

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
	c := &capture{m: m, channel: messages.DirectChannel(agent), agent: agent, tee: tee,
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
	// Senders are agent-like names without spaces; ":" can never be part
	// of an agent name, so "alice:stderr" cannot collide with an agent.
	sender := c.agent
	if stream != "stdout" {
		sender += ":" + stream
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
	if err := appendMessages(c.m, c.channel, batch); err != nil {
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

// ChannelMessages reads every message of a channel, oldest first.
func (m *Manager) ChannelMessages(channel string) ([]messages.Message, error) {
	return messages.ReadMessages(m.Store, channel, "", 0)
}

// journalOutputError records a capture failure; output loss must be visible.
func (m *Manager) journalOutputError(agent string, err error) error {
	return m.event(journal.Event{Type: "agent.output_error", Kind: "agent", Path: AgentPath(agent), Agent: agent,
		Data: map[string]any{"error": err.Error()}})
}
