package web

// Benchmarks of the browser face at the scale the issue names: a store of
// 100k documents (97k done items, the rest agents, questions, commitments,
// chunks, a live queue) while a pool completes 10 items per second.
//
//   - BenchmarkViewWrite: one durable document write on that store, the
//     baseline (ms = p50; p50-ms, p99-ms).
//   - BenchmarkViewFirstPaint: open the view (index cache warm, as after
//     any earlier tavern command) and serve the first full page and the
//     queue board (ms); page-ms is the pages alone, as a person opening
//     the browser on a running server sees them.
//   - BenchmarkServeFirstPaint: what a person sees: the built binary's
//     `tavern serve` started on the store (index warm) while items
//     complete at 10/s, until its first full page and the queue board
//     are served (ms: from exec to the second page; ready-ms: until it
//     printed its URL).
//   - BenchmarkViewEventToPage: from an item's completion returning to a
//     page client (the SSE stream, then the fragment fetch, as app.js
//     does) holding a board whose done column shows it (p50-ms, p99-ms),
//     with completions paced at 10/s.
//
// make bench (cmd/benchreport) shows first paint and event-to-page as
// ratios to the write time. The 100k tree is built once per
// TAVERN_BENCH_DIR (make bench keeps it for all rounds) and reused.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tavernhq/tavern/agents/view"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

const (
	benchDocs   = 100_000
	benchDone   = 97_000
	eventsPerS  = 10
	benchEvents = 60 // per run: 6 s at 10/s
)

var benchTree struct {
	sync.Mutex
	root string
}

// bench100k returns the root of the 100k-document store, building it if
// this TAVERN_BENCH_DIR has none yet.
func bench100k(b *testing.B) string {
	b.Helper()
	benchTree.Lock()
	defer benchTree.Unlock()
	if benchTree.root != "" {
		return benchTree.root
	}
	base := os.Getenv("TAVERN_BENCH_DIR")
	if base == "" {
		base = filepath.Join(os.TempDir(), "tavern-view-bench")
	}
	dir := filepath.Join(base, "view-100k")
	root := filepath.Join(dir, ".tavern")
	if _, err := os.Stat(filepath.Join(dir, "complete")); err == nil {
		benchTree.root = root
		return root
	}
	os.RemoveAll(dir)
	start := time.Now()
	s, _, err := docstore.Init(root, "bench")
	if err != nil {
		b.Fatal(err)
	}
	// Plain file writes from 8 goroutines (documents written by hand, as
	// far as the engine knows): the tree is the fixture, not what is
	// measured.
	files := make(chan [2]string, 1024)
	var wg sync.WaitGroup
	var werr error
	var wmu sync.Mutex
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range files {
				full := filepath.Join(root, filepath.FromSlash(f[0]))
				err := os.MkdirAll(filepath.Dir(full), 0o755)
				if err == nil {
					err = os.WriteFile(full, []byte(f[1]), 0o644)
				}
				if err != nil {
					wmu.Lock()
					werr = err
					wmu.Unlock()
				}
			}
		}()
	}
	write := func(rel, text string) { files <- [2]string{rel, text} }
	now := schema.FormatTime(time.Now().Add(-time.Hour))
	n := 0
	write("queues/bulk/queue.md", "---\nname: bulk\npriority: 1\n---\n")
	for i := 0; i < benchDone; i++ {
		id := queues.NewItemID(5)
		write(queues.ItemPath("bulk", queues.Done, id), fmt.Sprintf("---\nid: %s\nqueue: bulk\ntitle: bulk item %d\npriority: 5\nattempts: 1\ncreated: %s\ncompleted: %s\nresult: ok\n---\nDo thing %d.\n", id, i, now, now, i))
		n++
	}
	for i := 0; i < 1000; i++ {
		id := queues.NewItemID(5)
		write(queues.ItemPath("bulk", queues.Pending, id), fmt.Sprintf("---\nid: %s\nqueue: bulk\ntitle: waiting item %d\npriority: 5\nattempts: 0\ncreated: %s\n---\n", id, i, now))
		n++
	}
	for i := 0; i < 100; i++ {
		id := queues.NewItemID(5)
		write(queues.ItemPath("bulk", queues.Dead, id), fmt.Sprintf("---\nid: %s\nqueue: bulk\ntitle: dead item %d\npriority: 5\nattempts: 3\ncreated: %s\ndead_reason: exit 1\n---\n", id, i, now))
		n++
	}
	for i := 0; i < 500; i++ {
		write(fmt.Sprintf("agents/drone-%d.md", i), fmt.Sprintf("---\nname: drone-%d\nrole: worker\nstate: done\nspawns: 3\nupdated: %s\n---\n## Assignment\n\nwork\n", i, now))
		n++
	}
	for i := 0; i < 1000; i++ {
		id := docstore.NewID()
		write("questions/"+id+".md", fmt.Sprintf("---\nid: %s\nfrom: drone-%d\nto: '@user'\nstatus: answered\nanswer: yes\ncreated: %s\n---\nShall I %d?\n", id, i%500, now, i))
		n++
	}
	for i := 0; i < 300; i++ {
		id := docstore.NewID()
		write(fmt.Sprintf("commitments/drone-%d/%s.md", i, id), fmt.Sprintf("---\nid: %s\nagent: drone-%d\ndescription: tests pass\nassertion: 'true'\nstatus: passed\n---\n", id, i))
		n++
	}
	for c := 0; c < 50; c++ {
		write(fmt.Sprintf("channels/ch-%d.md", c), fmt.Sprintf("---\nname: ch-%d\ntopic: topic %d\n---\n", c, c))
		n++
		for k := 0; n < benchDocs-200 && k < 20; k++ {
			id := docstore.NewID()
			write(fmt.Sprintf("messages/ch-%d/%s.md", c, id), fmt.Sprintf("---\nchannel: ch-%d\nfirst_id: %s\nlast_id: %s\nmessage_count: 100\nlast_time: %s\n---\n", c, id, id, now))
			n++
		}
	}
	close(files)
	wg.Wait()
	if werr != nil {
		b.Fatal(werr)
	}
	// The live queue the pool works on: items added through the broker.
	br, err := queues.Open(s, queues.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	if _, err := br.CreateQueue("live", queues.QueueOptions{}); err != nil {
		b.Fatal(err)
	}
	for n < benchDocs {
		if _, err := br.Add("live", queues.AddOptions{Title: "live item"}); err != nil {
			b.Fatal(err)
		}
		n++
	}
	// A first open builds the index cache, as any earlier tavern command
	// would have.
	v, err := view.Open(s, view.Options{Person: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	v.Close()
	if err := os.WriteFile(filepath.Join(dir, "complete"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("built a %d-document store in %s", n, time.Since(start).Round(time.Millisecond))
	benchTree.root = root
	return root
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(int(float64(len(s))*p), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkViewWrite is the baseline: one durable document write (an
// update of one field) on the 100k store.
func BenchmarkViewWrite(b *testing.B) {
	root := bench100k(b)
	s, err := docstore.Open(root)
	if err != nil {
		b.Fatal(err)
	}
	var d []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := s.Update("agents/drone-0.md", func(doc *docstore.Doc) error { return doc.Set("spawns", i) }); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(ms(percentile(d, 0.5)), "ms")
	b.ReportMetric(ms(percentile(d, 0.5)), "p50-ms")
	b.ReportMetric(ms(percentile(d, 0.99)), "p99-ms")
}

// BenchmarkViewFirstPaint opens the view of the 100k store and serves
// the Needs-you page and the queue board.
func BenchmarkViewFirstPaint(b *testing.B) {
	root := bench100k(b)
	var total, page time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		s, err := docstore.Open(root)
		if err != nil {
			b.Fatal(err)
		}
		v, err := view.Open(s, view.Options{Person: "bench", Watch: true})
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(New(v, Options{}))
		tp := time.Now()
		firstPages(b, srv.URL)
		total += time.Since(t0)
		page += time.Since(tp)
		b.StopTimer()
		srv.Close()
		v.Close()
		b.StartTimer()
	}
	b.ReportMetric(ms(total)/float64(b.N), "ms")
	b.ReportMetric(ms(page)/float64(b.N), "page-ms")
}

// firstPages fetches what a person opening the view sees first: the
// Needs-you page and the queue board.
func firstPages(b *testing.B, base string) {
	b.Helper()
	for _, path := range []string{"/", "/queues"} {
		resp, err := http.Get(base + path)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(body) == 0 {
			b.Fatalf("%s: %d", path, resp.StatusCode)
		}
	}
}

// tavernBinary builds cmd/tavern once per test binary, as make build does.
var tavernBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "tavern-web-bench-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "tavern")
	out, err := exec.Command("go", "build", "-tags", "urfave_cli_no_docs", "-o", bin, "github.com/tavernhq/tavern/cmd/tavern").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// completeAtPace takes and completes items of the live queue at 10/s
// until ctx ends (the load the issue names), keeping enough pending.
func completeAtPace(ctx context.Context, b *testing.B, root string) (stop func()) {
	b.Helper()
	ws, err := docstore.Open(root)
	if err != nil {
		b.Fatal(err)
	}
	br, err := queues.Open(ws, queues.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second / eventsPerS)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			claim, err := br.Take(ctx, queues.TakeOptions{Queues: []string{"live"}, As: "bench"})
			if errors.Is(err, queues.ErrEmpty) {
				if _, err := br.Add("live", queues.AddOptions{Title: "live item"}); err != nil {
					b.Error(err)
					return
				}
				continue
			}
			if err != nil {
				b.Error(err)
				return
			}
			if _, err := claim.Complete("ok"); err != nil {
				b.Error(err)
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
		br.Close()
	}
}

// BenchmarkServeFirstPaint starts the built `tavern serve` on the 100k
// store while items complete at 10/s and times its first pages.
func BenchmarkServeFirstPaint(b *testing.B) {
	root := bench100k(b)
	bin, err := tavernBinary()
	if err != nil {
		b.Fatal(err)
	}
	stop := completeAtPace(context.Background(), b, root)
	defer stop()
	var total, ready time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--as", "bench")
		cmd.Dir = filepath.Dir(root)
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		url, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			b.Fatalf("tavern serve printed no URL: %v", err)
		}
		tr := time.Now()
		url = strings.TrimSuffix(strings.TrimSpace(url), "/")
		firstPages(b, url)
		total += time.Since(t0)
		ready += tr.Sub(t0)
		b.StopTimer()
		cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			b.Fatalf("tavern serve: %v", err)
		}
		b.StartTimer()
	}
	b.ReportMetric(ms(total)/float64(b.N), "ms")
	b.ReportMetric(ms(ready)/float64(b.N), "ready-ms")
}

// pageClient is what app.js does: on every change event of /events,
// fetch the page's fragment (one fetch in flight, one more queued), and
// keep the latest body with the time it arrived.
type pageClient struct {
	mu   sync.Mutex
	cond *sync.Cond
	body string
	at   time.Time
}

func (c *pageClient) run(ctx context.Context, b *testing.B, base, path string) {
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Error(err)
		return
	}
	defer resp.Body.Close()
	changes := make(chan struct{}, 1)
	go func() {
		for range changes {
			fr, _ := http.NewRequestWithContext(ctx, "GET", base+path, nil)
			fr.Header.Set(FragmentHeader, "1")
			r, err := http.DefaultClient.Do(fr)
			if err != nil {
				return
			}
			body, _ := io.ReadAll(r.Body)
			r.Body.Close()
			c.mu.Lock()
			c.body, c.at = string(body), time.Now()
			c.cond.Broadcast()
			c.mu.Unlock()
		}
	}()
	defer close(changes)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "event: ") {
			select {
			case changes <- struct{}{}:
			default: // a fetch is queued already: it will see this change
			}
		}
	}
}

// doneColumn is the part of a board fragment that lists a queue's done
// items.
func doneColumn(body, queue string) string {
	i := strings.Index(body, `id="queue-`+queue+`"`)
	if i < 0 {
		return ""
	}
	body = body[i:]
	j := strings.Index(body, `class="col c-done"`)
	if j < 0 {
		return ""
	}
	body = body[j:]
	if k := strings.Index(body, `class="col c-dead"`); k >= 0 {
		body = body[:k]
	}
	return body
}

// BenchmarkViewEventToPage: a pool completes items of the live queue at
// 10/s; each completion is timed from Complete's return until the page
// client holds a board whose done column shows the item.
func BenchmarkViewEventToPage(b *testing.B) {
	root := bench100k(b)
	s, err := docstore.Open(root)
	if err != nil {
		b.Fatal(err)
	}
	v, err := view.Open(s, view.Options{Person: "bench", Watch: true})
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	srv := httptest.NewServer(New(v, Options{}))
	defer srv.Close()
	ws, err := docstore.Open(root)
	if err != nil {
		b.Fatal(err)
	}
	br, err := queues.Open(ws, queues.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	st, err := br.Stats("live")
	if err != nil {
		b.Fatal(err)
	}
	for i := st.Pending; i < benchEvents*b.N+10; i++ { // rounds reuse the tree
		if _, err := br.Add("live", queues.AddOptions{Title: "live item"}); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &pageClient{}
	c.cond = sync.NewCond(&c.mu)
	go c.run(ctx, b, srv.URL, "/queues")

	var lat []time.Duration
	tick := time.NewTicker(time.Second / eventsPerS)
	defer tick.Stop()
	b.ResetTimer()
	for i := 0; i < b.N*benchEvents; i++ {
		<-tick.C
		claim, err := br.Take(context.Background(), queues.TakeOptions{Queues: []string{"live"}, As: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := claim.Complete("ok"); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		want := `/items/` + claim.ID + `"`
		deadline := t0.Add(30 * time.Second)
		c.mu.Lock()
		for !(strings.Contains(doneColumn(c.body, "live"), want) && c.at.After(t0)) {
			if time.Now().After(deadline) {
				c.mu.Unlock()
				b.Fatalf("event %d: the page did not show %s within 30s", i, claim.ID)
			}
			waitCond(c.cond, 100*time.Millisecond)
		}
		lat = append(lat, c.at.Sub(t0))
		c.mu.Unlock()
	}
	b.StopTimer()
	b.ReportMetric(ms(percentile(lat, 0.5)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 0.99)), "p99-ms")
}

// waitCond waits on c (its lock held) until a broadcast or d passes, so
// the loop above re-checks its deadline even if nothing arrives.
func waitCond(c *sync.Cond, d time.Duration) {
	t := time.AfterFunc(d, func() {
		c.L.Lock()
		c.Broadcast()
		c.L.Unlock()
	})
	c.Wait()
	t.Stop()
}
