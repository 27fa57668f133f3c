package kit

import (
	"errors"
	"time"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/tuples"
)

// Env is the store and the engines a hook, prime or the MCP server acts
// through, opened once per process. The queue broker and the tuple space
// are opened on first use: most hook calls need neither.
type Env struct {
	Store   *docstore.Store
	Manager *agents.Manager
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time

	broker *queues.Broker
	space  *tuples.Space
}

// OpenEnv opens the agents Manager (and so the journal) of s.
func OpenEnv(s *docstore.Store) (*Env, error) {
	m, err := agents.NewManager(s)
	if err != nil {
		return nil, err
	}
	return &Env{Store: s, Manager: m}, nil
}

// Close releases what OpenEnv and first uses opened.
func (e *Env) Close() error {
	var errs []error
	if e.space != nil {
		errs = append(errs, e.space.Close())
	}
	if e.broker != nil {
		errs = append(errs, e.broker.Close())
	}
	errs = append(errs, e.Manager.Close())
	return errors.Join(errs...)
}

func (e *Env) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// Broker returns the queue broker, sharing the Manager's journal.
func (e *Env) Broker() (*queues.Broker, error) {
	if e.broker == nil {
		b, err := queues.Open(e.Store, queues.Options{Journal: e.Manager.Journal, Now: e.Now})
		if err != nil {
			return nil, err
		}
		e.broker = b
	}
	return e.broker, nil
}

// Space returns the tuple space (reservations), sharing the journal.
func (e *Env) Space() (*tuples.Space, error) {
	if e.space == nil {
		sp, err := tuples.NewSpace(e.Store, tuples.SpaceOptions{Journal: e.Manager.Journal, Now: e.Now})
		if err != nil {
			return nil, err
		}
		e.space = sp
	}
	return e.space, nil
}
