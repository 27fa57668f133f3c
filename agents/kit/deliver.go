package kit

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// Delivery limits: what a prompt or tool hook adds is read by the model on
// every turn it fires, so it stays short; what does not fit is delivered
// by the next hook.
const (
	deliverPerChannel = 10
	deliverText       = 600  // characters of one message shown
	deliverBudget     = 3000 // characters of one delivery
)

// Deliver collects what arrived for agent since the last delivery and
// marks it delivered, so each thing is given at most once:
//
//   - unread messages on the channels the agent reads (its @ channel and
//     every shared one), up to 10 per channel; they are read with
//     messages.Recv, which advances the agent's bookmark under its lock,
//     so two concurrent hooks never deliver one message twice. The
//     agent's own messages are not unread (messages.Recv passes over
//     them);
//   - answers to the agent's questions (the question gets
//     answer_delivered);
//   - nudges: questions newly addressed to the agent (notified_to records
//     the recipient told; a question that bubbles to someone else is told
//     again to them).
//
// It returns the text to add as context ("" when nothing arrived).
// Delivery stops early when the text reaches its budget; the rest stays
// for the next call.
func Deliver(e *Env, agent string) (string, error) {
	if agent == "" {
		return "", ErrNoAgent
	}
	var w strings.Builder
	full := func() bool { return w.Len() >= deliverBudget }
	var errs []error

	unread, err := messages.Inbox(e.Store, agent)
	if err != nil {
		errs = append(errs, err)
	}
	var msgLines []string
	var chans []string
	count := map[string]int{}
	for _, u := range unread {
		if u.Count > 0 {
			chans = append(chans, u.Channel)
			count[u.Channel] = u.Count
		}
	}
	size := 0
	// One read of every channel with something new, one bookmark write.
	if len(chans) > 0 {
		skipped, err := messages.RecvEach(e.Store, agent, chans, messages.RecvOptions{Limit: deliverPerChannel}, func(ch string, msgs []messages.Message) bool {
			for _, m := range msgs {
				line := fmt.Sprintf("- [%s] %s (%s): %s", ch, m.Sender, m.Time.UTC().Format("15:04"), clip(m.Text, deliverText))
				msgLines, size = append(msgLines, line), size+len(line)+1
			}
			if rest := count[ch] - len(msgs); rest > 0 {
				line := fmt.Sprintf("- [%s] … %d more: `tavern recv %s --as %s`", ch, rest, ch, agent)
				msgLines, size = append(msgLines, line), size+len(line)+1
			}
			return size < deliverBudget
		})
		errs = append(errs, skipped...)
		if err != nil {
			errs = append(errs, err)
			msgLines = nil // the bookmarks did not move: they come again next time
		}
	}
	if len(msgLines) > 0 {
		w.WriteString("New messages for you (Tavern):\n" + strings.Join(msgLines, "\n") + "\n")
	}

	qpaths, err := e.Store.ListFiles(schema.Question)
	if err != nil {
		errs = append(errs, err)
	}
	now := e.now()
	// One handle on questions/ for the reads: no walk of each path.
	read := e.Store.ReadFile
	if dir, err := e.Store.OpenDir("questions"); err == nil {
		defer dir.Close()
		read = func(rel string) ([]byte, error) {
			if name, ok := strings.CutPrefix(rel, "questions/"); ok && !strings.Contains(name, "/") {
				return dir.ReadFile(name)
			}
			return e.Store.ReadFile(rel)
		}
	}
	for _, rel := range qpaths {
		if full() {
			break
		}
		// Most questions are not this agent's: skip them before parsing
		// (this runs after every tool call).
		data, err := read(rel)
		if err != nil || !bytes.Contains(data, []byte(agent)) {
			continue
		}
		d, err := docstore.Parse(rel, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		from, to, status := d.String("from"), d.String("to"), d.String("status")
		if status == "" {
			status = agents.QuestionOpen
		}
		id := d.String("id")
		if id == "" {
			id = strings.TrimSuffix(strings.TrimPrefix(rel, "questions/"), ".md")
		}
		switch {
		case from == agent && status == agents.QuestionAnswered && !d.Has("answer_delivered"):
			line := fmt.Sprintf("Answer to your question %s (%s): %s\n", id, orDash(d.String("answered_by")), clip(d.String("answer"), deliverText))
			if err := markQuestion(e.Store, rel, func(d *docstore.Doc) (bool, error) {
				if d.Has("answer_delivered") {
					return false, nil // another hook delivered it meanwhile
				}
				return true, d.Set("answer_delivered", now)
			}); err != nil {
				if !errors.Is(err, errDelivered) {
					errs = append(errs, err)
				}
				continue
			}
			w.WriteString(line)
		case to == agent && status == agents.QuestionOpen && d.String("notified_to") != agent:
			line := fmt.Sprintf("Question for you from %s (%s): %s\nAnswer with `tavern answer %s \"...\" --as %s`.\n", orDash(from), id, clip(strings.TrimSpace(string(d.Body())), deliverText), id, agent)
			if err := markQuestion(e.Store, rel, func(d *docstore.Doc) (bool, error) {
				if d.String("notified_to") == agent {
					return false, nil
				}
				return true, d.Set("notified_to", agent)
			}); err != nil {
				if !errors.Is(err, errDelivered) {
					errs = append(errs, err)
				}
				continue
			}
			w.WriteString(line)
		}
	}
	return w.String(), errors.Join(errs...)
}

var errDelivered = errors.New("delivered by another hook")

// markQuestion records a delivery on a question under its document lock;
// fn returns false when it finds the delivery already recorded.
func markQuestion(s *docstore.Store, rel string, fn func(*docstore.Doc) (bool, error)) error {
	_, err := s.Update(rel, func(d *docstore.Doc) error {
		ok, err := fn(d)
		if err != nil {
			return err
		}
		if !ok {
			return errDelivered
		}
		return nil
	})
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
