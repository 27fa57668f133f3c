package main

import (
	"errors"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/plans"
)

func newItemCommand() *cli.Command {
	return &cli.Command{
		Name:  "item",
		Usage: "work items: show, done, fail, renew, release, retry",
		Description: `Every change to a claimed item carries the claim attempt printed by
` + "`tavern queue take`" + ` (--attempt N, the fencing token): a stale attempt (the item was
reaped, released or completed since) exits 4 and changes nothing. Without
--attempt the current claim is used, whatever its attempt; but an agent named
(--as, $TAVERN_AGENT) acts only on its own claim: another's exits 4, naming
its holder and attempt. Its --attempt given on purpose takes the claim over.

ID is the item's id, QUEUE/ID (as ` + "`tavern ls items`" + ` prints it), a unique
prefix of either, or the path of its file (.tavern/queues/QUEUE/STATE/ID.md, as
ls and git status print it; the item wherever it is now).

Examples:
   tavern item show ID --json
   tavern item done ID --attempt 1 --result out.md
   tavern item fail ID --attempt 1 --reason "tests fail"`,
		Subcommands: []*cli.Command{
			newItemShowCommand(),
			newItemChangeCommand("done", "complete a claimed item", `Moves the item to done/ with completed and result (--result FILE, - for
stdin; a multi-line result goes to the body under "## Result").

Example:
   tavern item done "$id" --attempt "$attempt" --result out.txt`,
				[]cli.Flag{&cli.StringFlag{Name: "result", Usage: "read the result from `FILE` (- for stdin)"}}, itemDone),
			newItemChangeCommand("fail", "fail a claimed item (retried with backoff, dead after max attempts)", `Records --reason as last_error. The item goes back to pending/ with
not_before = now + backoff * 2^(attempts-1) (capped at backoff_max), or to
dead/ once it has used max_attempts.

Example:
   tavern item fail "$id" --attempt "$attempt" --reason "tests failed"`,
				[]cli.Flag{&cli.StringFlag{Name: "reason", Usage: "why it failed"}}, itemFail),
			newItemChangeCommand("renew", "extend a claim's lease by the queue's lease", `Sets lease_until to now + the queue's lease. Heartbeat with it while working.

Example:
   tavern item renew "$id" --attempt "$attempt"`, nil, itemRenew),
			newItemChangeCommand("release", "give a claimed item back to pending (attempt not counted)", `Returns the item to pending/ at once; the attempt does not count against
max_attempts.

Example:
   tavern item release "$id" --attempt "$attempt"`, nil, itemRelease),
			newItemRetryCommand(),
		},
	}
}

func newItemShowCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "print an item wherever it is",
		ArgsUsage: "ID",
		Description: `Prints the item file as on disk (same as ` + "`tavern show items/ID`" + `).

Examples:
   tavern item show p01-0193...
   tavern item show p01-0193... --json`,
		Flags:  []cli.Flag{jsonFlag()},
		Action: runItemShow,
	}
}

func runItemShow(c *cli.Context) error {
	s, b, it, err := openItem(c, "item show")
	if err != nil {
		return err
	}
	defer b.Close()
	if c.Bool("json") {
		return printJSON(c, itemObject(s, it))
	}
	_, err = c.App.Writer.Write(it.Doc.Bytes())
	return err
}

func newItemRetryCommand() *cli.Command {
	return &cli.Command{
		Name:      "retry",
		Usage:     "move a dead item back to pending (attempts reset)",
		ArgsUsage: "ID",
		Description: `Does what ` + "`tavern queue retry QUEUE ID`" + ` does for the item, in its own queue:
back to pending/ with attempts reset to 0; last_error is kept. A person's
command: a dead item waits for someone to decide it is worth another try.

Prints "ID pending". An ID that names no item exits 3, an item that is not in
dead/ exits 4 (saying where it is), and nothing moves.

Example:
   tavern item retry p01-0193...`,
		Flags:  []cli.Flag{jsonFlag()},
		Action: runItemRetry,
	}
}

func runItemRetry(c *cli.Context) error {
	s, b, it, err := openItem(c, "item retry")
	if err != nil {
		return err
	}
	defer b.Close()
	// queue retry's own call, so that both say and refuse the same: one
	// id given, one item moved or an error.
	items, err := b.Retry(it.Queue, it.ID)
	if err != nil {
		return err
	}
	it = items[0]
	if c.Bool("json") {
		return printJSON(c, itemObject(s, it))
	}
	outf(c, "%s %s\n", it.ID, it.State)
	return nil
}

// openItem opens the store's broker and the item the command's one
// argument names (an id, a prefix, Q/ID or a file path), wherever it is.
// The caller closes b.
func openItem(c *cli.Context, cmd string) (*docstore.Store, *queues.Broker, *queues.Item, error) {
	if c.NArg() != 1 {
		return nil, nil, nil, usageErr("%s takes one ID", cmd)
	}
	s, b, err := openBroker(c)
	if err != nil {
		return nil, nil, nil, err
	}
	id, err := b.ResolveID(c.Args().First())
	if err == nil {
		var it *queues.Item
		if it, err = b.Get(id); err == nil {
			return s, b, it, nil
		}
	}
	b.Close()
	return nil, nil, nil, err
}

// itemChange is one change of a claimed item (done, fail, renew,
// release) at claim attempt attempt, by as ("" when nobody was named).
type itemChange func(c *cli.Context, b *queues.Broker, id string, attempt int, as string) (*queues.Item, error)

func newItemChangeCommand(name, usage, desc string, flags []cli.Flag, do itemChange) *cli.Command {
	return &cli.Command{
		Name:        name,
		Usage:       usage,
		ArgsUsage:   "ID",
		Description: desc + "\n\nPrints \"ID STATE\". A stale --attempt exits 4 and changes nothing, and so does\nan agent named (--as, $TAVERN_AGENT) without --attempt on another's claim.",
		Flags:       append(append([]cli.Flag{attemptFlag(), asFlag()}, flags...), jsonFlag()),
		Action:      func(c *cli.Context) error { return runItemChange(c, do) },
	}
}

func runItemChange(c *cli.Context, do itemChange) error {
	if c.NArg() != 1 {
		return usageErr("item %s takes one ID", c.Command.Name)
	}
	s, b, err := openBroker(c)
	if err != nil {
		return err
	}
	defer b.Close()
	// Who acts is resolved like everywhere (an unknown --as or
	// $TAVERN_AGENT is refused). The attempt is the fence; a name given
	// (--as, $TAVERN_AGENT) without one must be the claim's holder
	// (queues.CompleteAs). Nobody named: a person at a terminal, as ever.
	actor, err := actorOf(c, s)
	if err != nil {
		return err
	}
	as := ""
	if actor.Via != "" {
		as = actor.Name
	}
	id, err := b.ResolveID(c.Args().First())
	if err != nil {
		return err
	}
	it, err := do(c, b, id, c.Int("attempt"), as)
	if err != nil {
		return err
	}
	if it.Plan != "" {
		// Its box follows (a done item ticks it).
		if _, err := plans.SyncItem(b, it.ID); err != nil {
			warn(c, err)
		}
	}
	if c.Bool("json") {
		return printJSON(c, itemObject(s, it))
	}
	outf(c, "%s %s\n", it.ID, it.State)
	return nil
}

func itemDone(c *cli.Context, b *queues.Broker, id string, attempt int, as string) (*queues.Item, error) {
	res, err := readFileArg(c, "result")
	if err != nil {
		return nil, err
	}
	return b.CompleteAs(id, attempt, as, string(res))
}

func itemFail(c *cli.Context, b *queues.Broker, id string, attempt int, as string) (*queues.Item, error) {
	return b.FailAs(id, attempt, as, c.String("reason"))
}

func itemRenew(_ *cli.Context, b *queues.Broker, id string, attempt int, as string) (*queues.Item, error) {
	return b.RenewAs(id, attempt, as)
}

func itemRelease(_ *cli.Context, b *queues.Broker, id string, attempt int, as string) (*queues.Item, error) {
	return b.ReleaseAs(id, attempt, as)
}

// itemRef is the id of the item ref names by a unique prefix (as item
// show takes it), or ref itself when it is no item's prefix: the command
// then says what it says of an unknown item (trace still finds an item
// the journal knows). Several matches are ErrAmbiguous (exit 2).
func itemRef(b *queues.Broker, ref string) (string, error) {
	id, err := b.ResolveID(ref)
	if errors.Is(err, docstore.ErrAmbiguous) {
		return "", err
	}
	if err != nil {
		return ref, nil
	}
	return id, nil
}
