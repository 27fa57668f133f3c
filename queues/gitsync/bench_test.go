package gitsync_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	_ "github.com/tavernhq/tavern/queues/etcd"
	"github.com/tavernhq/tavern/queues/etcd/etcdtest"
	"github.com/tavernhq/tavern/queues/gitsync"
	"github.com/tavernhq/tavern/queues/gitsync/gittest"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher"
	"github.com/tavernhq/tavern/watcher/journal"
)

// benchBase is a fresh directory on the work disk (TAVERN_BENCH_DIR, as
// the other benchmarks), or a temporary one.
func benchBase(b *testing.B) string {
	b.Helper()
	base := os.Getenv("TAVERN_BENCH_DIR")
	if base == "" {
		return b.TempDir()
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		b.Fatal(err)
	}
	dir, err := os.MkdirTemp(base, strings.NewReplacer("/", "_", "=", "").Replace(b.Name())+"-")
	if err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkMultiClaims measures take+done cycles per second across 3
// clones of one store with 4 workers each (12 in all), claims arbitrated
// by etcd (a real etcd 3.4 on loopback, data on the same disk) or by git
// (compare-and-swap pushes to a git daemon on loopback), next to
// /local: the same 12 workers on one store with today's rename + flock
// claims, the single-machine rate (cmd/benchreport pairs them). Each
// clone has its own Broker and engine client, as separate machines
// would; the clones are copies of the store (as after a sync); documents
// are not synced during the run, only claims are arbitrated.
func BenchmarkMultiClaims(b *testing.B) {
	b.Run("local", func(b *testing.B) { benchClaims(b, "local", 1, 12) })
	b.Run("etcd", func(b *testing.B) { benchClaims(b, "etcd", 3, 4) })
	b.Run("git", func(b *testing.B) { benchClaims(b, "git", 3, 4) })
}

func benchClaims(b *testing.B, mode string, clones, workers int) {
	root := benchBase(b)
	cfg := ""
	switch mode {
	case "etcd":
		srv := etcdtest.Start(b)
		cfg = "coordination: etcd\netcd:\n  endpoints: [" + srv.Client + "]\n  lease_ttl: 5s\n"
	case "git":
		srv := gittest.Start(b)
		cfg = "coordination: git\nsync:\n  remote: " + srv.Repo(b, "p") + "\n"
	}
	first := filepath.Join(root, "c0", ".tavern")
	s, _, err := docstore.Init(first, "bench")
	if err != nil {
		b.Fatal(err)
	}
	if cfg != "" {
		data, _ := os.ReadFile(filepath.Join(first, "tavern.md"))
		text := strings.Replace(string(data), "\n---\n", "\n"+cfg+"---\n", 1)
		if err := os.WriteFile(filepath.Join(first, "tavern.md"), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b0, err := queues.Open(s, queues.Options{Coordinator: noCoord{}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := b0.CreateQueue("q", queues.QueueOptions{Lease: time.Minute}); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		if _, err := b0.Add("q", queues.AddOptions{Title: "item"}); err != nil {
			b.Fatal(err)
		}
	}
	b0.Close()
	var brokers []*queues.Broker
	for c := 0; c < clones; c++ {
		dir := filepath.Join(root, fmt.Sprintf("c%d", c), ".tavern")
		if c > 0 {
			os.MkdirAll(filepath.Dir(dir), 0o755)
			if out, err := exec.Command("cp", "-a", first, dir).CombinedOutput(); err != nil {
				b.Fatalf("cp: %v %s", err, out)
			}
			os.Remove(filepath.Join(dir, queues.MachineFile))
		}
		sc, err := docstore.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		br, err := queues.Open(sc, queues.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer br.Close()
		brokers = append(brokers, br)
	}
	exec.Command("sync").Run()
	var done sync.WaitGroup
	var mu sync.Mutex
	var failed error
	n := 0
	b.ResetTimer()
	for _, br := range brokers {
		for w := 0; w < workers; w++ {
			done.Add(1)
			go func(br *queues.Broker) {
				defer done.Done()
				for {
					c, err := br.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}, Liveness: queues.HoldLock})
					if errors.Is(err, queues.ErrEmpty) {
						var ee *queues.EmptyError
						if errors.As(err, &ee) && ee.Diag.Elsewhere == 0 {
							return // nothing left anywhere this clone can see
						}
						mu.Lock()
						left := n < b.N
						mu.Unlock()
						if !left {
							return
						}
						continue
					}
					if err == nil {
						_, err = c.Complete("ok")
					}
					mu.Lock()
					if err != nil && failed == nil {
						failed = err
					}
					if err == nil {
						n++
					}
					stop := failed != nil || n >= b.N
					mu.Unlock()
					if stop {
						return
					}
				}
			}(br)
		}
	}
	done.Wait()
	b.StopTimer()
	if failed != nil {
		b.Fatal(failed)
	}
	if n != b.N {
		b.Fatalf("%d of %d items done", n, b.N)
	}
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(n)/s, "ops/s")
	}
}

// noCoord is a Coordinator of "no engine" for the setup Broker: items are
// added without arbitration (queues.Open would otherwise open the engine
// tavern.md names).
type noCoord struct{ queues.Coordinator }

func (noCoord) Engine() string { return "none" }
func (noCoord) Close() error   { return nil }

// BenchmarkSyncLatency measures how long a document edit on one clone
// takes to be in the other clone's store: the editing clone's sync round
// (commit, fetch, push) then the other's (fetch, merge, write, journal),
// through a git daemon on loopback; p50 and p99 in ms. Paired with
// BenchmarkRawGitRoundTrip: the same edit as plain git (commit, push,
// pull) between two plain clones.
func BenchmarkSyncLatency(b *testing.B) {
	srv := gittest.Start(b)
	url := srv.Repo(b, "p")
	root := benchBase(b)
	a, _, err := docstore.Init(filepath.Join(root, "a", ".tavern"), "bench")
	if err != nil {
		b.Fatal(err)
	}
	a.Update(docstore.ConfigFile, func(d *docstore.Doc) error { return d.SetYAML("sync", "{remote: '"+url+"'}") })
	for i := 0; i < 200; i++ { // a store of some size
		newAgentDoc(b, a, fmt.Sprintf("n%03d", i))
	}
	newAgentDoc(b, a, "ann")
	sa, err := gitsync.Open(a, gitsync.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer sa.Close()
	ctx := context.Background()
	if _, err := sa.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "b"), 0o755)
	bs, err := gitsync.Clone(filepath.Join(root, "b", ".tavern"), url, "")
	if err != nil {
		b.Fatal(err)
	}
	sb, err := gitsync.Open(bs, gitsync.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	n := samples(b)
	lat := make([]time.Duration, 0, n)
	b.ResetTimer()
	for i := 0; i < n; i++ {
		v := fmt.Sprint("v", i)
		start := time.Now()
		if _, err := a.Update("agents/ann.md", func(d *docstore.Doc) error { return d.Set("model", v) }); err != nil {
			b.Fatal(err)
		}
		if rep, err := sa.Sync(ctx); err != nil || !rep.Pushed {
			b.Fatalf("sync a: %v %+v", err, rep)
		}
		if _, err := sb.Sync(ctx); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		if d, err := bs.Get("agents/ann.md"); err != nil || d.String("model") != v {
			b.Fatalf("b has %v %v, want model %s", d, err, v)
		}
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

func newAgentDoc(tb testing.TB, s *docstore.Store, name string) {
	tb.Helper()
	now := time.Now().UTC()
	d, err := docstore.New(schema.Agent, []docstore.Field{{Key: schema.VersionField, Value: 1}, {Key: "name", Value: name}, {Key: "updated", Value: now}}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.WriteFile("agents/"+name+".md", d.Bytes()); err != nil {
		tb.Fatal(err)
	}
}

// samples is how many latencies a percentile benchmark takes: b.N, but
// at least 30, so the p99 means something whatever -benchtime gives
// (each sample takes about a second: b.N alone would be 1 or 2).
func samples(b *testing.B) int {
	if b.N < 30 {
		return 30
	}
	return b.N
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p := func(q float64) float64 {
		i := int(q * float64(len(lat)-1))
		return float64(lat[i].Microseconds()) / 1000
	}
	b.ReportMetric(p(0.5), "p50-ms")
	b.ReportMetric(p(0.99), "p99-ms")
}

// BenchmarkRawGitRoundTrip is the baseline of BenchmarkSyncLatency: one
// file edited in a plain clone, committed and pushed, then pulled by
// another plain clone, through the same kind of git daemon.
func BenchmarkRawGitRoundTrip(b *testing.B) {
	srv := gittest.Start(b)
	url := srv.Repo(b, "raw")
	root := benchBase(b)
	git := func(dir string, args ...string) {
		b.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=b", "-c", "user.email=b@b"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	a, c := filepath.Join(root, "a"), filepath.Join(root, "c")
	os.MkdirAll(a, 0o755)
	git(a, "init", "-q", "-b", "main")
	for i := 0; i < 200; i++ {
		os.WriteFile(filepath.Join(a, fmt.Sprintf("n%03d.md", i)), []byte("body\n"), 0o644)
	}
	os.WriteFile(filepath.Join(a, "ann.md"), []byte("model: v\n"), 0o644)
	git(a, "add", "-A")
	git(a, "commit", "-qm", "init")
	git(a, "push", "-q", url, "main")
	if out, err := exec.Command("git", "clone", "-q", "-b", "main", url, c).CombinedOutput(); err != nil {
		b.Fatalf("clone: %v %s", err, out)
	}
	n := samples(b)
	lat := make([]time.Duration, 0, n)
	b.ResetTimer()
	for i := 0; i < n; i++ {
		start := time.Now()
		os.WriteFile(filepath.Join(a, "ann.md"), []byte(fmt.Sprintf("model: v%d\n", i)), 0o644)
		git(a, "commit", "-qam", "edit")
		git(a, "push", "-q", url, "main")
		git(c, "pull", "-q", "--ff-only", url, "main")
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

// BenchmarkSyncToWatch measures what a person on another machine sees:
// the time from a document edit on one clone to the change being in the
// other clone's projection and on its watch stream (a Subscription of
// `external` events naming the editing machine, as `tavern watch`
// shows), with both clones syncing in the background the way
// long-running commands do (Syncer.Run, sync.every 1s; the editing clone
// also syncs soon after its local change). p50 and p99 in ms and in sync
// intervals (cmd/benchreport pairs the p99 with BenchmarkSyncLatency,
// the two rounds back to back without waiting for an interval).
func BenchmarkSyncToWatch(b *testing.B) {
	const every = time.Second
	srv := gittest.Start(b)
	url := srv.Repo(b, "p")
	root := benchBase(b)
	a, _, err := docstore.Init(filepath.Join(root, "a", ".tavern"), "bench")
	if err != nil {
		b.Fatal(err)
	}
	a.Update(docstore.ConfigFile, func(d *docstore.Doc) error {
		return d.SetYAML("sync", "{remote: '"+url+"', every: "+every.String()+"}")
	})
	if err := os.WriteFile(filepath.Join(a.Root(), queues.MachineFile), []byte("alpha\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		newAgentDoc(b, a, fmt.Sprintf("n%03d", i))
	}
	newAgentDoc(b, a, "ann")
	ja, err := journal.Open(a.Root(), journal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ja.Close()
	sa, err := gitsync.Open(a, gitsync.Options{Journal: ja})
	if err != nil {
		b.Fatal(err)
	}
	defer sa.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := sa.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "b"), 0o755)
	bs, err := gitsync.Clone(filepath.Join(root, "b", ".tavern"), url, "")
	if err != nil {
		b.Fatal(err)
	}
	jb, err := journal.Open(bs.Root(), journal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer jb.Close()
	p, err := watcher.Open(bs, watcher.Options{Watch: true, Journal: jb, FollowJournal: true})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	sub := p.Subscribe(journal.Filter{Types: []string{journal.TypeExternal}}, 1024)
	defer sub.Close()
	sb, err := gitsync.Open(bs, gitsync.Options{Journal: jb})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	var wg sync.WaitGroup
	for _, sy := range []*gitsync.Syncer{sa, sb} {
		wg.Add(1)
		go func(sy *gitsync.Syncer) {
			defer wg.Done()
			sy.Run(ctx, 0, func(rep *gitsync.Report, err error) {
				if os.Getenv("TAVERN_BENCH_DEBUG") != "" && rep != nil {
					fmt.Fprintf(os.Stderr, "%s round at %s: %s pushed=%v applied=%d deferred=%v offline=%q err=%v\n", sy.Machine(), rep.Started.Format("15:04:05.000"), rep.Duration, rep.Pushed, len(rep.Applied), rep.Deferred, rep.Offline, err)
				}
			})
		}(sy)
	}
	defer wg.Wait()
	defer cancel()
	n := samples(b)
	lat := make([]time.Duration, 0, n)
	b.ResetTimer()
	for i := 0; i < n; i++ {
		v := fmt.Sprint("v", i)
		start := time.Now()
		// An edit as the tavern command makes it: the write, then its
		// journal event (which also wakes the editing clone's sync).
		d, err := a.Update("agents/ann.md", func(d *docstore.Doc) error { return d.Set("model", v) })
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ja.Append(journal.Event{Type: "doc.updated", Kind: "agent", Path: "agents/ann.md", Rev: d.Rev}); err != nil {
			b.Fatal(err)
		}
		wctx, wcancel := context.WithTimeout(ctx, time.Minute)
		if _, err := p.WaitFor(wctx, "agent", func(e watcher.Entry) bool { return e.Name == "ann" && e.Fields["model"] == v }); err != nil {
			b.Fatalf("edit %d never reached the other clone's projection: %v", i, err)
		}
		for seen := false; !seen; {
			select {
			case e := <-sub.C:
				seen = e.Path == "agents/ann.md" && e.Data["machine"] == "alpha"
			case <-wctx.Done():
				b.Fatalf("edit %d never reached the other clone's watch stream", i)
			}
		}
		wcancel()
		lat = append(lat, time.Since(start))
		if os.Getenv("TAVERN_BENCH_DEBUG") != "" {
			fmt.Fprintf(os.Stderr, "edit %d at %s seen after %s\n", i, start.Format("15:04:05.000"), time.Since(start))
		}
	}
	b.StopTimer()
	reportPercentiles(b, lat)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2])/float64(every), "p50-intervals")
	b.ReportMetric(float64(lat[(len(lat)-1)*99/100])/float64(every), "p99-intervals")
}
