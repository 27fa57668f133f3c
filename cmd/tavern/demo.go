package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/examples/demo"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/watcher/journal"
)

func init() {
	register(&cli.Command{
		Name:  "demo",
		Usage: "run the end-to-end demo in a temporary directory",
		Description: `Creates a store in a temporary directory, a "drone" role with its constitution,
a queue of 20 items, a lead agent with two commitments, then runs a real pool of
shell-script drones (examples/demo/drone.sh, one 'tavern spawn' process per
item, about one in five failing and retried) with the verifier daemon checking
the lead's commitments, and prints a summary. --keep leaves the directory for
you to look at ('ls', 'cat', 'tavern ls agents' in it).`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "keep", Usage: "keep the demo directory"},
			&cli.IntFlag{Name: "max", Value: 4, Usage: "most drones at once"},
		},
		Action:      runDemo,
		Subcommands: []*cli.Command{newDemoWorkflowCommand()},
	})
}

func runDemo(c *cli.Context) error {
	start := time.Now()
	dir, err := os.MkdirTemp("", "tavern-demo-")
	if err != nil {
		return err
	}
	if !c.Bool("keep") {
		defer os.RemoveAll(dir)
	}
	say := func(format string, args ...any) { outf(c, "demo: "+format+"\n", args...) }
	say("project %s", dir)

	s, _, err := docstore.Init(filepath.Join(dir, docstore.DirName), "demo")
	if err != nil {
		return err
	}
	m, err := agents.NewManager(s)
	if err != nil {
		return err
	}
	defer m.Close()
	b, err := queues.Open(s, queues.Options{Journal: m.Journal})
	if err != nil {
		return err
	}
	defer b.Close()

	// The scenario files.
	constitution, _ := fs.ReadFile(demo.Files, "constitution.md")
	script, _ := fs.ReadFile(demo.Files, "drone.sh")
	items, _ := fs.ReadFile(demo.Files, "items.txt")
	if err := os.WriteFile(filepath.Join(dir, "drone.sh"), script, 0o755); err != nil {
		return err
	}
	sha, err := m.WriteConstitution("drone", "counts letters, one item per run", string(constitution))
	if err != nil {
		return err
	}
	say("constitutions/drone.md sha256 %.12s", sha)

	if _, err := b.CreateQueue("phrases", queues.QueueOptions{MaxAttempts: 3, Backoff: 100 * time.Millisecond, BackoffMax: time.Second, OnEmpty: "terminate"}); err != nil {
		return err
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(items))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			if _, err := b.Add("phrases", queues.AddOptions{Title: line, Body: []byte(line + "\n")}); err != nil {
				return err
			}
			n++
		}
	}
	say("queue phrases: %d items", n)

	// The lead owns the work; its commitments are checked by the verifier.
	if _, err := m.CreateAgent(agents.AgentSpec{Name: "lead", Assignment: "Have every phrase counted by the drone pool."}); err != nil {
		return err
	}
	for _, cm := range [][2]string{
		{"every done item has its output file", `test "$(ls out | wc -l)" -eq "$(ls .tavern/queues/phrases/done | wc -l)"`},
		{"nothing left pending or claimed", `test -z "$(find .tavern/queues/phrases/pending .tavern/queues/phrases/claimed -name '*.md')"`},
	} {
		if _, err := m.AddCommitment("lead", cm[0], cm[1], 10*time.Second); err != nil {
			return err
		}
	}
	if _, err := m.Transition("lead", agents.Working, agents.TransitionOptions{By: "demo"}); err != nil {
		return err
	}
	say("lead: working, 2 commitments")

	// The verifier daemon, as `tavern verifier` would run it.
	vctx, stopVerifier := context.WithCancel(c.Context)
	defer stopVerifier()
	verr := make(chan error, 1)
	go func() {
		verr <- m.RunVerifier(vctx, agents.VerifierOptions{BubbleAfter: -1,
			OnVerified: func(agent, state string, results []agents.Result) {
				say("verifier: %s -> %s", agent, state)
			}})
	}()

	// The pool: real `tavern spawn` processes of this binary.
	self, err := os.Executable()
	if err != nil {
		return err
	}
	say("pool counters: up to %d drones running drone.sh", c.Int("max"))
	opt := agents.PoolOptions{Name: "counters", Queues: []string{"phrases"}, Max: c.Int("max"), OnEmpty: agents.EmptyTerminate,
		Command: []string{"./drone.sh"}, Broker: b, Tick: 250 * time.Millisecond,
		Progress: progressLine(c), OnError: func(err error) { errf(c, "\ndemo: %v\n", err) }}
	opt.Drone = func(agent string, wait time.Duration) *exec.Cmd {
		cmd := exec.Command(self, "spawn", "--dir", s.Root(), "--name", agent, "--pool", "counters", "--role", "drone",
			"--parent", "lead", "--queue", "phrases", "--json", "--", "./drone.sh")
		cmd.Env = childBaseEnv()
		return cmd
	}
	mt, err := m.RunPool(context.WithoutCancel(c.Context), opt)
	errf(c, "\n")
	if err != nil {
		return err
	}

	// The lead claims it is done: the verifier decides.
	if _, err := m.Transition("lead", agents.Verifying, agents.TransitionOptions{By: "lead", Reason: "pool drained"}); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(c.Context, time.Minute)
	lead, err := m.WaitAgent(wctx, "lead", agents.Done, agents.Working, agents.Failed)
	cancel()
	stopVerifier()
	<-verr
	if err != nil {
		return fmt.Errorf("waiting for the verifier: %w", err)
	}

	// Summary.
	st, err := b.Stats("phrases")
	if err != nil {
		return err
	}
	outf(c, "\n== summary ==\n")
	outf(c, "items: %d done, %d dead (after %d attempts), %d pending\n", st.Done, st.Dead, 3, st.Pending)
	outf(c, "pool: %d drones spawned (peak %d concurrent), %d runs failed and were retried or dead-lettered, utilization %.2f, amplification %.2f\n",
		mt.Spawned, mt.PeakDrones, mt.ItemsFailed, mt.Utilization, mt.Amplification)
	cs, _ := m.Commitments("lead")
	outf(c, "lead: %s\n", lead.State)
	for _, cm := range cs {
		outf(c, "  %-7s %s\n", cm.Status, cm.Description)
	}
	counts := map[string]int{}
	journal.Read(s.Root(), journal.Filter{}, func(e journal.Event, err error) bool {
		if err == nil {
			counts[e.Type]++
		}
		return true
	})
	var types []string
	for t := range counts {
		types = append(types, t)
	}
	sort.Strings(types)
	outf(c, "journal (.tavern/events/):\n")
	tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	for _, t := range types {
		fmt.Fprintf(tw, "  %s\t%d\n", t, counts[t])
	}
	tw.Flush()
	outf(c, "finished in %s\n", time.Since(start).Round(time.Millisecond))
	if c.Bool("keep") {
		outf(c, "kept %s — try: cd %s && tavern ls agents && cat .tavern/pools/counters.md\n", dir, dir)
	}
	if lead.State != agents.Done {
		return fmt.Errorf("demo: the lead ended in %s, not done", lead.State)
	}
	return nil
}
