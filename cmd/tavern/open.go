package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/recall"
	"github.com/tavernhq/tavern/agents/usage"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/tuples"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// envAgent is the agent this process acts for: TAVERN_AGENT, which the
// spawn wrapper sets for its child ("" for a person).
func envAgent() string { return os.Getenv("TAVERN_AGENT") }

// storeDir finds the .tavern directory: --dir / TAVERN_DIR, else search
// upward from the working directory. --dir names the .tavern directory
// itself; a project directory holding a .tavern/ is accepted too.
func storeDir(c *cli.Context) (string, error) {
	if d := dirOption(c); d != "" {
		return namedStoreDir(d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return docstore.Find(wd)
}

// namedStoreDir is the store a --dir (or TAVERN_DIR) names: the .tavern
// directory itself, or a project directory holding one.
func namedStoreDir(d string) (string, error) {
	abs, err := filepath.Abs(d)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(abs, docstore.ConfigFile)); err != nil {
		if fi, err := os.Stat(filepath.Join(abs, docstore.DirName, docstore.ConfigFile)); err == nil && !fi.IsDir() {
			return filepath.Join(abs, docstore.DirName), nil
		}
	}
	return abs, nil
}

// dirOption is the --dir value: given after the command, else before it
// (`tavern --dir D show x`), else TAVERN_DIR. Every command defines --dir
// too (so it may follow the command), and urfave/cli reads a flag from the
// innermost context that defines it, which would silently drop a --dir
// given before the command; hence the walk up the lineage.
func dirOption(c *cli.Context) string {
	env := os.Getenv("TAVERN_DIR")
	for _, cc := range c.Lineage() {
		if cc.App == nil {
			continue // the bare root context, which has no flags
		}
		if v := cc.String("dir"); v != env {
			return v
		}
	}
	return env
}

// openStore opens the store with the agent rules on it (every write path
// obeys them: set and edit as well as the agent commands; the writer is
// envAgent) and every mutation journaled.
func openStore(c *cli.Context) (*docstore.Store, error) {
	return openWith(c, docstore.Open)
}

// openStoreAnyConfig is openStore for the commands that report or put
// right an invalid tavern.md (check, and set and edit of tavern.md,
// which call configFor): every other command refuses such a store.
func openStoreAnyConfig(c *cli.Context) (*docstore.Store, error) {
	return openWith(c, docstore.OpenAnyConfig)
}

func openWith(c *cli.Context, open func(string) (*docstore.Store, error)) (*docstore.Store, error) {
	dir, err := storeDir(c)
	if err != nil {
		return nil, err
	}
	s, err := open(dir)
	if err != nil {
		return nil, err
	}
	agents.InstallRules(s, envAgent())
	usage.InstallRules(s)  // a budget's pool: no typo of an existing one
	recall.InstallRules(s) // a knowledge entry's domain: likewise
	recordJournal(c, s)
	return s, nil
}

// configFor is the store's tavern.md problem unless rel is tavern.md
// itself: set and edit may put tavern.md right, nothing else.
func configFor(s *docstore.Store, rel string) error {
	if rel == docstore.ConfigFile {
		return nil
	}
	return s.ConfigErr()
}

// recordJournal makes every mutation through s append its event to the
// journal, in the name of envAgent.
func recordJournal(c *cli.Context, s *docstore.Store) {
	j, err := journal.Open(s.Root(), journal.Options{})
	if err != nil {
		errf(c, "tavern: journal: %v\n", err)
		return
	}
	journal.RecordMutations(s, j, envAgent(), func(err error) {
		errf(c, "tavern: journal: %v\n", err)
	})
}

// openManager opens the store and its agent manager.
func openManager(c *cli.Context) (*agents.Manager, error) {
	s, err := openStore(c)
	if err != nil {
		return nil, err
	}
	return agents.NewManager(s)
}

// withManager is an Action that opens the agents Manager for fn and
// closes it afterwards.
func withManager(fn func(*cli.Context, *agents.Manager) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		m, err := openManager(c)
		if err != nil {
			return err
		}
		defer m.Close()
		return fn(c, m)
	}
}

// withStore is an Action that opens the store for fn.
func withStore(fn func(*cli.Context, *docstore.Store) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		s, err := openStore(c)
		if err != nil {
			return err
		}
		return fn(c, s)
	}
}

// openBroker opens the store and a queue broker on it.
func openBroker(c *cli.Context) (*docstore.Store, *queues.Broker, error) {
	s, err := openStore(c)
	if err != nil {
		return nil, nil, err
	}
	// A spawned child acts for its instance: its late actions after the
	// instance died are refused (queues.Options.Instance). A bad
	// TAVERN_INSTANCE is a name error: exit 2.
	b, err := queues.Open(s, queues.Options{Instance: os.Getenv("TAVERN_INSTANCE")})
	if err != nil {
		return nil, nil, err
	}
	return s, b, nil
}

// openSpace opens the store and its tuple space (journaling to the
// store's event journal).
func openSpace(c *cli.Context) (*tuples.Space, error) {
	s, err := openStore(c)
	if err != nil {
		return nil, err
	}
	return tuples.NewSpace(s, tuples.SpaceOptions{})
}

// actorOf is who the command acts for: agents.ResolveActor, the one
// rule (--as, else $TAVERN_AGENT, else the person, "user"). An --as or
// $TAVERN_AGENT that names no agent is refused (exit 3, with the nearest
// names), never created.
func actorOf(c *cli.Context, s *docstore.Store) (agents.Actor, error) {
	as := ""
	if hasFlag(c.Command, "as") {
		as = c.String("as")
		if as == "" && c.IsSet("as") {
			// --as '' names nobody: a bad name, not "the default".
			return agents.Actor{}, fmt.Errorf("--as: %w", schema.ValidAgentName(""))
		}
	}
	return agents.ResolveActor(s, as, envAgent())
}

// asOrEnv is --as, else $TAVERN_AGENT, unchecked: for the agent-tool
// commands (hook, prime, mcp, next) that derive an identity of their own
// (a hook session's agent) when neither is given.
func asOrEnv(c *cli.Context) string {
	if hasFlag(c.Command, "as") {
		if v := c.String("as"); v != "" {
			return v
		}
	}
	return envAgent()
}

// agentActor is actorOf for the commands that work only for an agent
// (wake, sleep): the person is a usage error.
func agentActor(c *cli.Context, s *docstore.Store) (agents.Actor, error) {
	a, err := actorOf(c, s)
	if err == nil && !a.Agent {
		err = fmt.Errorf("%s %w", commandName(c), agents.ErrPersonNotAgent)
	}
	return a, err
}

// commandName is the command's full name without the program's:
// "memory add", not "add".
func commandName(c *cli.Context) string {
	if name := strings.TrimPrefix(c.Command.HelpName, c.App.Name+" "); name != "" {
		return name
	}
	return c.Command.Name
}

// contextWithoutCancel keeps the command's values but not main's
// cancellation on SIGINT: commands that drain on their own signal channel
// (pool run) decide themselves what a signal means.
func contextWithoutCancel(c *cli.Context) context.Context {
	return context.WithoutCancel(c.Context)
}
