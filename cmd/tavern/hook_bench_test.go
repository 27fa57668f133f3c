package main

// make bench: each hook handler, run as the tools run it (the binary `make
// build` makes, benchTavern; not the test binary, which starts slower;
// the payload on stdin), on a store of about 10,000 documents, against the
// same-run baseline of starting the binary at all (tavern --help) and of
// starting any process (/bin/true). The goal is <= 50 ms per
// handler; the report prints ms/op and the ratio to the baselines.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tavernhq/tavern/agents/kit"
	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/docstore/storetest"
	"github.com/tavernhq/tavern/schema"
)

var (
	bigStoreOnce sync.Once
	bigStoreDir  string
	bigStoreErr  error
)

// bigStore builds, once per process, a project whose store holds about
// 10k documents: 4,000 queue items (200 claimed by others), 2,000
// memories, 2,000 knowledge entries, 1,000 agents, 1,000 commitments, 500
// reservations of other agents, 300 questions and 3,000 messages in 30
// channels. The files are written directly (relaxed durability would
// still journal every write through the library); they are what the
// library writes.
func bigStore(b *testing.B) string {
	b.Helper()
	bigStoreOnce.Do(func() {
		bigStoreDir = storetest.BenchDir(b) // on the work disk; make bench removes it
		bigStoreErr = fillBigStore(bigStoreDir)
	})
	if bigStoreErr != nil {
		b.Fatal(bigStoreErr)
	}
	return bigStoreDir
}

func fillBigStore(dir string) error {
	s, _, err := docstore.Init(filepath.Join(dir, ".tavern"), "bench")
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	stamp := func(d time.Duration) string { return schema.FormatTime(now.Add(d)) }
	write := func(rel, text string) error { return s.WriteFile(rel, []byte(text)) }
	for q := range 4 {
		if err := write(fmt.Sprintf("queues/q%d/queue.md", q), fmt.Sprintf("---\nschema_version: 1\nname: q%d\npriority: %d\n---\n", q, q)); err != nil {
			return err
		}
		for i := range 1000 {
			id := fmt.Sprintf("p%02d-%s", i%10, docstore.NewID())
			state, extra := "pending", ""
			if i < 50 {
				state, extra = "claimed", fmt.Sprintf("claimed_by: other-%d\nclaim_attempt: 1\nclaim_kind: lease\nlease_until: %s\n", i, stamp(time.Hour))
			}
			if err := write(fmt.Sprintf("queues/q%d/%s/%s.md", q, state, id),
				fmt.Sprintf("---\nschema_version: 1\nid: %s\nqueue: q%d\ntitle: task %d of queue %d\npriority: %d\nattempts: 0\n%screated: %s\nupdated: %s\n---\nDo task %d.\n", id, q, i, q, i%10, extra, stamp(0), stamp(0), i)); err != nil {
				return err
			}
		}
	}
	for i := range 1000 {
		name := fmt.Sprintf("agent-%d", i)
		if err := write("agents/"+name+".md", fmt.Sprintf("---\nschema_version: 1\nname: %s\nstate: idle\nspawns: 0\ncreated: %s\nupdated: %s\n---\n", name, stamp(0), stamp(0))); err != nil {
			return err
		}
		id := docstore.NewID()
		if err := write(fmt.Sprintf("commitments/%s/%s.md", name, id), fmt.Sprintf("---\nschema_version: 1\nid: %s\nagent: %s\ndescription: tests pass\nassertion: \"true\"\ntimeout: 1m0s\nstatus: passed\ncreated: %s\nupdated: %s\n---\n", id, name, stamp(0), stamp(0))); err != nil {
			return err
		}
	}
	for i := range 2000 {
		id := docstore.NewID()
		agent := fmt.Sprintf("agent-%d", i%200)
		if err := write(fmt.Sprintf("memory/%s/%s.md", agent, id), fmt.Sprintf("---\nschema_version: 1\nid: %s\nagent: %s\ntopic: notes\ncore: %v\narchived: false\ncreated: %s\nupdated: %s\n---\nmemory %d about the lexer and the database\n", id, agent, i%10 == 0, stamp(0), stamp(0), i)); err != nil {
			return err
		}
		kid := docstore.NewID()
		if err := write(fmt.Sprintf("knowledge/domain-%d/%s.md", i%20, kid), fmt.Sprintf("---\nschema_version: 1\nid: %s\ndomain: domain-%d\ncontributor: agent-1\narchived: false\ncreated: %s\nupdated: %s\n---\nknowledge %d: PostgreSQL connection pools and caches\n", kid, i%20, stamp(0), stamp(0), i)); err != nil {
			return err
		}
	}
	for i := range 500 {
		id := docstore.NewID()
		if err := write("tuples/reservation/"+id+".md", fmt.Sprintf("---\nschema_version: 1\nid: %s\ncreated: %s\nexpires: %s\nagent: other-%d\nglob: pkg%d/**\n---\n", id, stamp(0), stamp(2*time.Hour), i, i)); err != nil {
			return err
		}
	}
	for i := range 300 {
		id := docstore.NewID()
		if err := write("questions/"+id+".md", fmt.Sprintf("---\nschema_version: 1\nid: %s\nfrom: agent-%d\nto: agent-%d\nstatus: open\ncreated: %s\nupdated: %s\n---\nQuestion %d?\n", id, i, i+1, stamp(0), stamp(0), i)); err != nil {
			return err
		}
	}
	senders := make([]string, 100)
	for i := range 30 {
		ch := fmt.Sprintf("chan-%d", i)
		for j := range senders {
			senders[j] = fmt.Sprintf("message %d on %s", j, ch)
		}
		if _, err := messages.SendMessages(s, ch, "bob", senders); err != nil {
			return err
		}
	}
	return nil
}

// benchHook runs one hook of the built binary per iteration; before and
// after (untimed) set each iteration up and tear it down.
func benchHook(b *testing.B, dir string, ev kit.Event, payload func(i int) string, env []string, before, after func(i int)) {
	b.Helper()
	benchCommand(b, dir, []string{"hook", string(ev), "--tool", "claude"}, payload, env, before, after)
}

// benchCommand runs tavern ARGS of the built binary per iteration, with
// payload(i) on stdin; it must succeed and print nothing on stderr.
func benchCommand(b *testing.B, dir string, args []string, payload func(i int) string, env []string, before, after func(i int)) {
	b.Helper()
	base := os.Environ()
	var envs []string
	for _, e := range base {
		if k, _, _ := strings.Cut(e, "="); k != "TAVERN_DIR" && k != "TAVERN_AGENT" {
			envs = append(envs, e)
		}
	}
	envs = append(envs, env...)
	var total, cpu time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if before != nil {
			before(i)
		}
		cmd := exec.Command(benchTavern(b), args...)
		cmd.Dir = dir
		cmd.Env = envs
		cmd.Stdin = strings.NewReader(payload(i))
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		b.StartTimer()
		start := time.Now()
		err := cmd.Run()
		total += time.Since(start)
		b.StopTimer()
		if cmd.ProcessState != nil {
			cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		if err != nil || errb.Len() > 0 {
			b.Fatalf("tavern %s: %v\n%s", strings.Join(args, " "), err, errb.String())
		}
		if after != nil {
			after(i)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/op")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

func claudePayload(ev, session, dir, extra string) string {
	return fmt.Sprintf(`{"session_id":%q,"transcript_path":"/tmp/t.jsonl","cwd":%q,"permission_mode":"default","hook_event_name":%q%s}`, session, dir, ev, extra)
}

func runTavern(b *testing.B, dir string, stdin string, env []string, args ...string) {
	b.Helper()
	cmd := exec.Command(benchTavern(b), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("tavern %v: %v\n%s", args, err, out)
	}
}

func BenchmarkHook(b *testing.B) {
	dir := bigStore(b)
	tool := exec.Command("sleep", "3600")
	if err := tool.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { tool.Process.Kill(); tool.Wait() }()
	pidEnv := []string{"TAVERN_SESSION_PID=" + fmt.Sprint(tool.Process.Pid)}
	lexer := filepath.Join(dir, "src", "lexer.go")
	run := 0

	b.Run("session-start", func(b *testing.B) {
		run++
		sid := func(i int) string { return fmt.Sprintf("b%02d%05d-start", run, i) }
		benchHook(b, dir, kit.SessionStart, func(i int) string {
			return claudePayload("SessionStart", sid(i), dir, `,"source":"startup","model":"m"`)
		}, pidEnv, nil, func(i int) {
			runTavern(b, dir, claudePayload("SessionEnd", sid(i), dir, `,"reason":"other"`), pidEnv, "hook", "session-end", "--tool", "claude")
		})
	})

	// One session for the in-session hooks: it holds an item and has a
	// passed commitment (the stop gate's common, let-through path).
	session := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	agent := kit.SessionAgent(kit.Claude, session)
	runTavern(b, dir, claudePayload("SessionStart", session, dir, `,"source":"startup"`), pidEnv, "hook", "session-start", "--tool", "claude")
	defer runTavern(b, dir, claudePayload("SessionEnd", session, dir, `,"reason":"other"`), pidEnv, "hook", "session-end", "--tool", "claude")
	runTavern(b, dir, "", []string{"TAVERN_AGENT=" + agent}, "next", "--take")
	runTavern(b, dir, "", nil, "commit", "add", agent, "--desc", "ok", "--assert", "true")
	runTavern(b, dir, "", nil, "verify", agent)

	// What session-start prints, alone: `tavern prime --hook-json` for an
	// agent that holds an item (issue 17's "prime --hook-json <= 50 ms").
	b.Run("prime-hook-json", func(b *testing.B) {
		benchCommand(b, dir, []string{"prime", "--hook-json"}, func(int) string { return "" },
			[]string{"TAVERN_AGENT=" + agent}, nil, nil)
	})
	b.Run("pre-tool-use", func(b *testing.B) {
		benchHook(b, dir, kit.PreToolUse, func(int) string {
			return claudePayload("PreToolUse", session, dir, fmt.Sprintf(`,"tool_name":"Write","tool_input":{"file_path":%q,"content":"x"},"tool_use_id":"t1"`, lexer))
		}, pidEnv, nil, nil)
	})
	b.Run("user-prompt-submit", func(b *testing.B) {
		benchHook(b, dir, kit.UserPromptSubmit, func(int) string {
			return claudePayload("UserPromptSubmit", session, dir, `,"prompt":"go on"`)
		}, pidEnv, func(i int) {
			if i%2 == 0 { // every other prompt has a new message to deliver
				runTavern(b, dir, "", nil, "send", "@"+agent, fmt.Sprintf("message %d", i), "--as", "agent-1") // senders are known agents (issue 16)
			}
		}, nil)
	})
	b.Run("post-tool-use", func(b *testing.B) {
		benchHook(b, dir, kit.PostToolUse, func(int) string {
			return claudePayload("PostToolUse", session, dir, fmt.Sprintf(`,"tool_name":"Write","tool_input":{"file_path":%q},"tool_response":{"success":true},"tool_use_id":"t1"`, lexer))
		}, pidEnv, nil, nil)
	})
	b.Run("stop", func(b *testing.B) {
		benchHook(b, dir, kit.Stop, func(int) string {
			return claudePayload("Stop", session, dir, `,"stop_hook_active":false`)
		}, pidEnv, nil, nil)
	})
	b.Run("session-end", func(b *testing.B) {
		run++
		sid := func(i int) string { return fmt.Sprintf("e%02d%05d-end", run, i) }
		benchHook(b, dir, kit.SessionEnd, func(i int) string {
			return claudePayload("SessionEnd", sid(i), dir, `,"reason":"other"`)
		}, pidEnv, func(i int) {
			runTavern(b, dir, claudePayload("SessionStart", sid(i), dir, `,"source":"startup"`), pidEnv, "hook", "session-start", "--tool", "claude")
		}, nil)
	})
}

// BenchmarkHookBaseline is the same-run baseline: starting the binary at
// all, and starting any process.
func BenchmarkHookBaseline(b *testing.B) {
	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"tavern-help", []string{benchTavern(b), "--help"}},
		{"true", []string{"true"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var total, cpu time.Duration
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(tc.argv[0], tc.argv[1:]...)
				cmd.Stdout, cmd.Stderr = nil, nil
				start := time.Now()
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
				cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/op")
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}
