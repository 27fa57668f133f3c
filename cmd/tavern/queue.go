package main

import (
	"os"
	"os/user"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
)

// queueCmd is `tavern queue`; its subcommands live in queue_*.go, one
// file each, and add themselves from init.
var queueCmd = &cli.Command{
	Name:  "queue",
	Usage: "work queues: create, add, take, ls, retry",
	Description: `A queue is .tavern/queues/<Q>/queue.md plus one file per item in pending/,
claimed/, done/ and dead/. Item ids are p<priority>-<uuidv7> (priority 0 is
the highest, 99 the lowest), so ` + "`ls pending/`" + ` is the take order.`,
}

// itemCmd is `tavern item`; its subcommands are in item.go.
var itemCmd = &cli.Command{
	Name:  "item",
	Usage: "work items: show, done, fail, renew, release",
	Description: `Every change to a claimed item carries the claim attempt printed by
` + "`tavern queue take`" + ` (--attempt N, the fencing token): a stale attempt (the item was
reaped, released or completed since) exits 4 and changes nothing. Without
--attempt the current claim is used, whatever its attempt.`,
}

func init() {
	register(queueCmd)
	register(itemCmd)
	mapExit(queues.ErrUnknownQueue, exitNotFound)
	mapExit(queues.ErrEmpty, exitNotFound)
	mapExit(queues.ErrStale, exitConflict)
	mapExit(queues.ErrState, exitConflict)
	mapExit(queues.ErrQueueExists, exitConflict)
	mapExit(queues.ErrPriority, exitUsage)
	mapExit(queues.ErrCycle, exitUsage)
	mapExit(queues.ErrBadDependency, exitUsage)
	mapExit(queues.ErrBadOption, exitUsage)
}

func addQueueCmd(c *cli.Command) { queueCmd.Subcommands = append(queueCmd.Subcommands, c) }
func addItemCmd(c *cli.Command)  { itemCmd.Subcommands = append(itemCmd.Subcommands, c) }

// openBroker opens the store and a queue broker on it.
func openBroker(c *cli.Context) (*docstore.Store, *queues.Broker, error) {
	s, err := openStore(c)
	if err != nil {
		return nil, nil, err
	}
	b, err := queues.Open(s, queues.Options{})
	if err != nil {
		return nil, nil, err
	}
	return s, b, nil
}

// cliHolder names a claimer that gave no --as: user@host.
func cliHolder() string {
	name := "cli"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return name + "@" + host
}

// warnDiag prints what take/ls saw besides claimable items: invalid
// files with path:line:col and items blocked by dead dependencies.
func warnDiag(c *cli.Context, invalid []error, blocked []queues.Blocked) {
	for _, e := range invalid {
		errf(c, "tavern: warning: %v\n", e)
	}
	for _, bl := range blocked {
		errf(c, "tavern: warning: %s\n", bl)
	}
}

// itemJSON is the JSON of an item: the `show --json` object plus id,
// queue, state and attempt.
type itemJSON struct {
	*docObject
	ID      string `json:"id"`
	Queue   string `json:"queue"`
	State   string `json:"state"`
	Attempt int    `json:"attempt"`
}

func itemObject(s *docstore.Store, it *queues.Item) *itemJSON {
	return &itemJSON{docObject: docJSON(s, it.Doc, true), ID: it.ID, Queue: it.Queue, State: it.State, Attempt: it.ClaimAttempt}
}

func blockedJSON(bl []queues.Blocked) []map[string]string {
	out := []map[string]string{}
	for _, b := range bl {
		out = append(out, map[string]string{"id": b.ID, "queue": b.Queue, "path": b.Path, "dep": b.Dep, "dep_state": b.DepState})
	}
	return out
}

func errorsJSON(errs []error) []map[string]any {
	out := []map[string]any{}
	for _, e := range errs {
		path, line, col := docstore.Position(e)
		out = append(out, map[string]any{"error": e.Error(), "path": path, "line": line, "col": col})
	}
	return out
}
