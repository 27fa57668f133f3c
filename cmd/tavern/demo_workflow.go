package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/agents/trace"
	"github.com/tavernhq/tavern/agents/usage"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/examples/workflow"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/plans"
	"github.com/tavernhq/tavern/watcher/journal"
)

func newDemoWorkflowCommand() *cli.Command {
	return &cli.Command{
		Name:  "workflow",
		Usage: "from a plan to merged code: plan, worktrees, merge queue, a human gate, usage, trace",
		Description: `Makes a git repository in a temporary directory, imports a plan of 12 nested
tasks (examples/workflow/plan.md) into a queue, and runs a pool of stand-in
coding agents (examples/workflow/drone.sh), each in its own git worktree. Their
branches merge into main through the merge queue, checked by
examples/workflow/check.sh; two tasks edit the same line on purpose, so one
merge fails with a conflict and is retried (the drone rebases and resolves it).
The last task waits at a human gate until this demo approves it as a person
(tavern approve). The plan's boxes are ticked as items complete. At the end it
prints the plan, main's history, the usage table and the trace of the item
that conflicted. --keep leaves the directory to look at.

Examples:
   tavern demo workflow
   tavern demo workflow --keep --max 6
   make demo-workflow   # the same, from a clone`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "keep", Usage: "keep the demo directory"},
			// As tavern demo's --rm: the default here, accepted so that
			// the flag the first demo taught is not refused.
			&cli.BoolFlag{Name: "rm", Usage: "remove the demo directory at the end (the default; --rm wins over --keep, as in tavern demo)"},
			&cli.IntFlag{Name: "max", Value: 4, Usage: "most drones at once (at least 2)"},
		},
		Action: runDemoWorkflow,
	}
}

func runDemoWorkflow(c *cli.Context) error {
	start := time.Now()
	if c.Int("max") < 2 {
		return usageErr("--max must be at least 2 (the deliberate conflict needs two drones at once)")
	}
	if _, err := exec.LookPath("git"); err != nil {
		return fmt.Errorf("the workflow demo needs git: %w", err)
	}
	dir, err := os.MkdirTemp("", "tavern-workflow-")
	if err != nil {
		return err
	}
	keep := c.Bool("keep") && !c.Bool("rm")
	if !keep {
		defer os.RemoveAll(dir)
	}
	say := func(format string, args ...any) { outf(c, "demo: "+format+"\n", args...) }
	say("project %s", dir)

	// The project: a git repository on main.
	gitEnv := append(childBaseEnv(), "GIT_AUTHOR_NAME=demo", "GIT_AUTHOR_EMAIL=demo@tavern.demo", "GIT_COMMITTER_NAME=demo", "GIT_COMMITTER_EMAIL=demo@tavern.demo")
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, gitEnv
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out)), nil
	}
	for name, text := range map[string]string{"README.md": "# greeting tool\n", "banner.txt": "BANNER\n", ".gitignore": ".tavern/\n.demo/\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"commit", "-q", "-m", "start"}} {
		if _, err := git(args...); err != nil {
			return err
		}
	}
	demoDir := filepath.Join(dir, ".demo")
	if err := os.MkdirAll(demoDir, 0o755); err != nil {
		return err
	}
	for _, f := range []string{"drone.sh", "check.sh", "plan.md"} {
		data, _ := fs.ReadFile(workflow.Files, f)
		if err := os.WriteFile(filepath.Join(demoDir, f), data, 0o755); err != nil {
			return err
		}
	}

	s, _, err := docstore.Init(filepath.Join(dir, docstore.DirName), "workflow-demo")
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
	if _, err := b.CreateQueue("tasks", queues.QueueOptions{MaxAttempts: 3, Backoff: 200 * time.Millisecond, BackoffMax: time.Second, OnEmpty: "terminate"}); err != nil {
		return err
	}
	// notify names an existing channel: made here on purpose.
	if _, err := messages.CreateChannel(s, "alerts", "dead letters of the demo"); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if _, err := b.SetOnDead("tasks", "notify alerts"); err != nil {
		return err
	}
	planData, _ := os.ReadFile(filepath.Join(demoDir, "plan.md"))
	rep, err := plans.Import(b, plans.ImportOptions{Name: "release", Queue: "tasks", Source: ".demo/plan.md", Data: planData, By: "demo"})
	if err != nil {
		return err
	}
	say("plan .demo/plan.md -> plans/release.md: %s in queue tasks (nested boxes first, parents after)", counted(len(rep.Added), "item"))

	// The person: approves a gate when a drone waits at it, with the real
	// `tavern approve` (a process no spawn wrapper started).
	self, err := os.Executable()
	if err != nil {
		return err
	}
	approved := make(chan string, 4)
	pctx, stopPerson := context.WithCancel(context.Background())
	defer stopPerson()
	go person(pctx, b, self, s.Root(), approved, say)

	check := "sh " + filepath.Join(demoDir, "check.sh")
	say("pool coders: up to %s, each in its own git worktree; merges into main through the merge queue, checked by %s", counted(c.Int("max"), "drone"), check)
	opt := agents.PoolOptions{Name: "coders", Queues: []string{"tasks"}, Max: c.Int("max"), OnEmpty: agents.EmptyTerminate,
		Command: []string{"sh", filepath.Join(demoDir, "drone.sh")}, Broker: b, Tick: 250 * time.Millisecond,
		Admit: usage.Admit(s, "coders"),
		OnTick: func() {
			_, _ = plans.SyncAll(b, "tasks")
			_, _ = m.EscalateDead(b, "tasks")
		},
		Progress: progressShow(c), OnError: func(err error) { errf(c, "\ndemo: %v\n", err) }}
	opt.Drone = func(agent string, wait time.Duration) *exec.Cmd {
		cmd := exec.Command(self, "spawn", "--dir", s.Root(), "--name", agent, "--pool", "coders", "--"+poolAdmittedFlag, "--queue", "tasks", "--json",
			"--worktree", "--base", "main", "--check", check, "--", "sh", filepath.Join(demoDir, "drone.sh"))
		cmd.Env = childBaseEnv()
		return cmd
	}
	mt, err := m.RunPool(context.WithoutCancel(c.Context), opt)
	errf(c, "\n")
	stopPerson()
	if err != nil {
		return err
	}
	var gates []string
	for len(approved) > 0 {
		gates = append(gates, <-approved)
	}

	// What happened.
	st, err := plans.GetStatus(b, "release", true)
	if err != nil {
		return err
	}
	outf(c, "\n== plans/release.md: %d of %d boxes ticked ==\n", st.Done, st.Total)
	body, _ := os.ReadFile(filepath.Join(s.Root(), plans.Path("release")))
	if d, err := docstore.Parse("release.md", body); err == nil {
		for _, line := range strings.Split(string(d.Body()), "\n") {
			if strings.Contains(line, "- [") {
				outf(c, "%s\n", line)
			}
		}
	}
	log, err := git("log", "--format=%h %an: %s", "main")
	if err != nil {
		return err
	}
	outf(c, "\n== git log main ==\n%s\n", log)
	banner, _ := git("show", "main:banner.txt")
	outf(c, "banner.txt on main: %q\n", banner)

	recs, _ := usage.Load(s, usage.Filter{})
	rows, total, _ := usage.Summarize(recs, "agent")
	outf(c, "\n== tavern usage (by agent) ==\n")
	tw := newTable(c.App.Writer, 0, 2, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "AGENT\tRUNS\tFAILED\tWALL\tCPU\tTOKENS IN\tTOKENS OUT\tCOST USD\t\n")
	for _, r := range append(rows, total) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%d\t%d\t%.4f\t\n", r.Key, r.Runs, r.Failed, secs(r.Wall), secs(r.CPU), r.TokensIn, r.TokensOut, r.Cost)
	}
	tw.Flush()

	// The trace of the item whose first merge failed.
	conflicted := ""
	_, _ = journal.Read(s.Root(), journal.Filter{Types: []string{queues.EventFailed}}, func(e journal.Event, err error) bool {
		if err == nil && strings.Contains(fmt.Sprint(e.Data["error"]), "merge conflict") && conflicted == "" {
			conflicted = e.Item
		}
		return true
	})
	if conflicted != "" {
		t, err := trace.Item(b, conflicted)
		if err != nil {
			return err
		}
		outf(c, "\n== tavern trace %s ==\n", conflicted)
		printTrace(c, t)
	}

	ws, _ := os.ReadDir(filepath.Join(dir, ".git", "tavern", "worktrees"))
	outf(c, "\n%s\n", workflowPoolLine(mt, len(ws)))
	outf(c, "gate approved by a person: %s\n", strings.Join(gates, ", "))
	outf(c, "finished in %s\n", time.Since(start).Round(time.Millisecond))
	if keep {
		outf(c, "kept %s — try: cd %s && tavern plan status release && tavern usage --by item && git log --graph --oneline main\n", dir, dir)
	}
	var problems []string
	if st.Done != st.Total {
		problems = append(problems, fmt.Sprintf("%d of %d boxes ticked", st.Done, st.Total))
	}
	if conflicted == "" {
		problems = append(problems, "no merge conflict happened (the two banner drones did not meet)")
	}
	if len(gates) == 0 {
		problems = append(problems, "no gate was approved")
	}
	if len(ws) != 0 {
		problems = append(problems, counted(len(ws), "worktree")+" left behind")
	}
	if len(problems) > 0 {
		return errors.New("demo: " + strings.Join(problems, "; "))
	}
	return nil
}

// person approves, with `tavern approve`, every gate at which a drone
// waits, until ctx ends.
func person(ctx context.Context, b *queues.Broker, self, store string, approved chan<- string, say func(string, ...any)) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		gates, _ := b.PendingGates()
		for _, g := range gates {
			if g.ItemState != queues.Claimed {
				continue
			}
			it, err := b.Get(g.Item)
			if err != nil || it.ClaimedBy == "" {
				continue
			}
			a, err := b.Store().Get(agents.AgentPath(it.ClaimedBy))
			if err != nil || a.String("state") != agents.Waiting {
				continue
			}
			cmd := exec.Command(self, "approve", "--dir", store, g.ID, "--by", "demo-user", "--reason", "read the VERSION change; ship it")
			cmd.Env = childBaseEnv()
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err = cmd.Run()
			say("\n%s waits at gate %s (%q): a person runs `tavern approve %s` -> %s", it.ClaimedBy, g.ID, g.Title, g.ID, strings.TrimSpace(out.String()))
			if err == nil {
				approved <- g.ID
			}
		}
	}
}

// workflowPoolLine is the demo's pool summary, its verbs agreeing with
// its counts.
func workflowPoolLine(mt *agents.PoolMetrics, worktrees int) string {
	return fmt.Sprintf("pool: %s spawned (peak %d), %s failed and %s retried; %s left",
		counted(mt.Spawned, "drone"), mt.PeakDrones, counted(mt.ItemsFailed, "run"), were(mt.ItemsFailed), counted(worktrees, "worktree"))
}
