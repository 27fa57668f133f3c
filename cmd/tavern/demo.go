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
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/examples/demo"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/watcher/journal"
)

func newDemoCommand() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "run the end-to-end demo in a temporary directory (kept; --rm removes it)",
		Description: `Creates a store in a temporary directory, a "drone" role with its constitution,
a queue of 20 items, a lead agent with two commitments, then runs a real pool of
shell-script drones (examples/demo/drone.sh, one 'tavern spawn' process per
item, about one in five failing and retried) with the verifier daemon checking
the lead's commitments, and prints a summary. Then it shows what the store is
made of: a document as it is on disk, the one-line git diff a 'tavern set'
makes (the store is committed to git first, when git is installed), and the
last lines of 'tavern log'. The directory is kept for you to look at ('ls',
'cat', 'git log', 'tavern ls agents' in it; it prints where); --rm removes it.

Examples:
   tavern demo
   tavern demo --rm
   make demo   # the same, from a clone`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "keep", Value: true, Usage: "keep the demo directory (--keep=false is --rm)"},
			&cli.BoolFlag{Name: "rm", Usage: "remove the demo directory at the end"},
			&cli.IntFlag{Name: "max", Value: 4, Usage: "most drones at once", Action: atLeastOne("max", "a pool of no drones does nothing")},
		},
		Action:      runDemo,
		Subcommands: []*cli.Command{newDemoWorkflowCommand()},
	}
}

// demoRun is one run of the demo: the project directory and what runs in it.
type demoRun struct {
	c   *cli.Context
	dir string
	s   *docstore.Store
	m   *agents.Manager
	b   *queues.Broker
}

func (d *demoRun) say(format string, args ...any) { outf(d.c, "demo: "+format+"\n", args...) }

func runDemo(c *cli.Context) error {
	start := time.Now()
	dir, err := os.MkdirTemp("", "tavern-demo-")
	if err != nil {
		return err
	}
	keep := c.Bool("keep") && !c.Bool("rm")
	if !keep {
		defer os.RemoveAll(dir)
	}
	d := &demoRun{c: c, dir: dir}
	d.say("project %s", dir)
	if err := d.open(); err != nil {
		return err
	}
	defer d.m.Close()
	defer d.b.Close()
	if err := d.setup(); err != nil {
		return err
	}
	lead, mt, err := d.runPool()
	if err != nil {
		return err
	}
	if err := d.summary(lead, mt); err != nil {
		return err
	}
	if err := d.showcase(); err != nil {
		return err
	}
	outf(c, "\nfinished in %s\n", time.Since(start).Round(time.Millisecond))
	if keep {
		outf(c, "kept %s — try: cd %s && tavern ls agents && git diff (remove it with rm -r, or run the demo with --rm)\n", dir, dir)
	} else {
		outf(c, "removed %s (--rm)\n", dir)
	}
	if lead.State != agents.Done {
		return fmt.Errorf("demo: the lead ended in %s, not done", lead.State)
	}
	return nil
}

// open creates the store, its agent manager and its queue broker.
func (d *demoRun) open() error {
	s, _, err := docstore.Init(filepath.Join(d.dir, docstore.DirName), "demo")
	if err != nil {
		return err
	}
	d.s = s
	if d.m, err = agents.NewManager(s); err != nil {
		return err
	}
	if d.b, err = queues.Open(s, queues.Options{Journal: d.m.Journal}); err != nil {
		d.m.Close()
		return err
	}
	return nil
}

// setup writes the scenario: the drone role, the queue of phrases, and
// the lead with its two commitments, working.
func (d *demoRun) setup() error {
	constitution, _ := fs.ReadFile(demo.Files, "constitution.md")
	script, _ := fs.ReadFile(demo.Files, "drone.sh")
	items, _ := fs.ReadFile(demo.Files, "items.txt")
	if err := os.WriteFile(filepath.Join(d.dir, "drone.sh"), script, 0o755); err != nil {
		return err
	}
	sha, err := d.m.WriteConstitution("drone", string(constitution), agents.ConstitutionOptions{Description: "counts letters, one item per run"})
	if err != nil {
		return err
	}
	d.say("constitutions/drone.md sha256 %.12s", sha)
	if _, err := d.b.CreateQueue("phrases", queues.QueueOptions{MaxAttempts: 3, Backoff: 100 * time.Millisecond, BackoffMax: time.Second, OnEmpty: "terminate"}); err != nil {
		return err
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(items))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			if _, err := d.b.Add("phrases", queues.AddOptions{Title: line, Body: []byte(line + "\n")}); err != nil {
				return err
			}
			n++
		}
	}
	d.say("queue phrases: %s", counted(n, "item"))
	// The lead owns the work; its commitments are checked by the verifier.
	if _, err := d.m.CreateAgent(agents.AgentSpec{Name: "lead", Assignment: "Have every phrase counted by the drone pool."}); err != nil {
		return err
	}
	for _, cm := range [][2]string{
		{"every done item has its output file", `test "$(ls out | wc -l)" -eq "$(ls .tavern/queues/phrases/done | wc -l)"`},
		{"nothing left pending or claimed", `test -z "$(find .tavern/queues/phrases/pending .tavern/queues/phrases/claimed -name '*.md')"`},
	} {
		if _, err := d.m.AddCommitment("lead", cm[0], cm[1], 10*time.Second); err != nil {
			return err
		}
	}
	if _, err := d.m.Transition("lead", agents.Working, agents.TransitionOptions{By: "demo"}); err != nil {
		return err
	}
	d.say("lead: working, 2 commitments")
	return nil
}

// runPool runs the verifier daemon and a pool of real `tavern spawn`
// drones of this binary until the queue is drained, then moves the lead
// to verifying and waits for the verifier's verdict.
func (d *demoRun) runPool() (*agents.Agent, *agents.PoolMetrics, error) {
	c := d.c
	vctx, stopVerifier := context.WithCancel(c.Context)
	defer stopVerifier()
	verr := make(chan error, 1)
	go func() {
		verr <- d.m.RunVerifier(vctx, agents.VerifierOptions{BubbleAfter: -1,
			OnVerified: func(agent, state string, results []agents.Result) { d.say("verifier: %s -> %s", agent, state) }})
	}()
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	d.say("pool counters: up to %s running drone.sh", counted(c.Int("max"), "drone"))
	opt := agents.PoolOptions{Name: "counters", Queues: []string{"phrases"}, Max: c.Int("max"), OnEmpty: agents.EmptyTerminate,
		Command: []string{"./drone.sh"}, Broker: d.b, Tick: 250 * time.Millisecond,
		Progress: progressShow(c), OnError: func(err error) { errf(c, "\ndemo: %v\n", err) }}
	opt.Drone = func(agent string, wait time.Duration) *exec.Cmd {
		cmd := exec.Command(self, "spawn", "--dir", d.s.Root(), "--name", agent, "--pool", "counters", "--role", "drone",
			"--parent", "lead", "--queue", "phrases", "--json", "--", "./drone.sh")
		cmd.Env = childBaseEnv()
		return cmd
	}
	mt, err := d.m.RunPool(context.WithoutCancel(c.Context), opt)
	errf(c, "\n")
	if err != nil {
		return nil, nil, err
	}
	// The lead claims it is done: the verifier decides.
	if _, err := d.m.Transition("lead", agents.Verifying, agents.TransitionOptions{By: "lead", Reason: "pool drained"}); err != nil {
		return nil, nil, err
	}
	wctx, cancel := context.WithTimeout(c.Context, time.Minute)
	lead, err := d.m.WaitAgent(wctx, "lead", agents.Done, agents.Working, agents.Failed)
	cancel()
	stopVerifier()
	<-verr
	if err != nil {
		return nil, nil, fmt.Errorf("waiting for the verifier: %w", err)
	}
	return lead, mt, nil
}

// summary prints what happened: items, pool metrics, the lead's
// commitments and the journal's event counts.
func (d *demoRun) summary(lead *agents.Agent, mt *agents.PoolMetrics) error {
	c := d.c
	st, err := d.b.Stats("phrases")
	if err != nil {
		return err
	}
	outf(c, "\n== summary ==\n")
	outf(c, "items: %d done, %d dead (after %d attempts), %d pending\n", st.Done, st.Dead, 3, st.Pending)
	outf(c, "pool: %s spawned (peak %d concurrent), %s failed and %s retried or dead-lettered, utilization %.2f, amplification %.2f\n",
		counted(mt.Spawned, "drone"), mt.PeakDrones, counted(mt.ItemsFailed, "run"), were(mt.ItemsFailed), mt.Utilization, mt.Amplification)
	cs, _ := d.m.Commitments("lead")
	outf(c, "lead: %s\n", lead.State)
	for _, cm := range cs {
		outf(c, "  %-7s %s\n", cm.Status, cm.Description)
	}
	counts := map[string]int{}
	journal.Read(d.s.Root(), journal.Filter{}, func(e journal.Event, err error) bool {
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
	tw := newTable(c.App.Writer, 0, 4, 2, ' ', 0)
	for _, t := range types {
		fmt.Fprintf(tw, "  %s\t%d\n", t, counts[t])
	}
	return tw.Flush()
}

// showcase shows what the store is made of: a document as it is on disk,
// the one-line git diff of a `tavern set` (after committing the store,
// when git is installed), and the last lines of `tavern log`. The set and
// the log run this binary, as a user would.
func (d *demoRun) showcase() error {
	c := d.c
	doc := filepath.Join(docstore.DirName, "queues", "phrases", "queue.md")
	data, err := os.ReadFile(filepath.Join(d.dir, doc))
	if err != nil {
		return err
	}
	outf(c, "\n== a document: %s (markdown with YAML frontmatter) ==\n$ cat %s\n%s", doc, doc, data)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	tavern := func(args ...string) ([]byte, error) {
		cmd := exec.Command(self, append(args, "--dir", d.s.Root())...)
		cmd.Dir, cmd.Env = d.dir, childBaseEnv()
		out, err := cmd.CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("tavern %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return out, nil
	}
	git := func(args ...string) ([]byte, error) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=tavern demo", "-c", "user.email=demo@localhost", "-c", "color.ui=never"}, args...)...)
		cmd.Dir = d.dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return out, nil
	}
	set := []string{"set", "queue/phrases", "priority=1"}
	if _, err := exec.LookPath("git"); err != nil {
		outf(c, "\n== tavern %s ==\n(git is not installed: no diff to show)\n", strings.Join(set, " "))
		if _, err := tavern(set...); err != nil {
			return err
		}
	} else {
		outf(c, "\n== git diff of a set: only the line that changed ==\n$ git init && git add .tavern && git commit\n")
		for _, args := range [][]string{{"init", "-q"}, {"add", ".tavern"}, {"commit", "-q", "-m", "the demo's store"}} {
			if _, err := git(args...); err != nil {
				return err
			}
		}
		if _, err := tavern(set...); err != nil {
			return err
		}
		diff, err := git("diff", "-U0", "--", doc)
		if err != nil {
			return err
		}
		stat, err := git("diff", "--stat")
		if err != nil {
			return err
		}
		outf(c, "$ tavern %s\n$ git diff -U0 %s\n%s$ git diff --stat   # the journal gained one line too\n%s", strings.Join(set, " "), doc, diff, stat)
	}
	log, err := tavern("log")
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimRight(string(log), "\n"), "\n")
	outf(c, "\n== tavern log: the journal of every change (the last 5 of %d) ==\n$ tavern log | tail -5\n%s\n", len(lines), strings.Join(lines[max(0, len(lines)-5):], "\n"))
	return nil
}
