package queues

import (
	"fmt"
	"strings"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// OnDead is where a queue's dead letters are escalated (queue.md's
// on_dead: "ask parent", "ask user" or "notify CHANNEL"). Package agents
// acts on it (Manager.EscalateDead): the queue layer only names it.
type OnDead struct {
	Ask     string // "parent" or "user"
	Channel string // notify this channel
}

// ParseOnDead reads an on_dead value; "" is no escalation.
func ParseOnDead(s string) (OnDead, error) {
	f := strings.Fields(s)
	switch {
	case len(f) == 0:
		return OnDead{}, nil
	case len(f) == 2 && f[0] == "ask" && (f[1] == "parent" || f[1] == "user"):
		return OnDead{Ask: f[1]}, nil
	case len(f) == 2 && f[0] == "notify":
		if err := schema.ValidName(f[1]); err != nil {
			return OnDead{}, fmt.Errorf("%w: on_dead %q: channel: %v", ErrBadOption, s, err)
		}
		return OnDead{Channel: f[1]}, nil
	}
	return OnDead{}, fmt.Errorf("%w: on_dead %q (want: ask parent | ask user | notify CHANNEL)%s", ErrBadOption, s, schema.ChoiceHint(strings.Join(f, " "), []string{"ask parent", "ask user"}))
}

func (o OnDead) String() string {
	switch {
	case o.Ask != "":
		return "ask " + o.Ask
	case o.Channel != "":
		return "notify " + o.Channel
	}
	return ""
}

// OnDead reads the queue's on_dead.
func (q *Queue) OnDead() (OnDead, error) {
	if q.Doc == nil {
		return OnDead{}, nil
	}
	return ParseOnDead(q.Doc.String("on_dead"))
}

// SetOnDead sets (or, with "", removes) a queue's on_dead.
func (b *Broker) SetOnDead(queue, spec string) (*Queue, error) {
	if _, err := ParseOnDead(spec); err != nil {
		return nil, &QueueError{Op: "configure", Queue: queue, Err: err}
	}
	if _, err := b.Queue(queue); err != nil {
		return nil, err
	}
	_, err := b.s.Update(QueuePath(queue), func(d *docstore.Doc) error {
		if spec == "" {
			return d.Delete("on_dead")
		}
		return d.Set("on_dead", spec)
	})
	if err != nil {
		return nil, err
	}
	return b.Queue(queue)
}
