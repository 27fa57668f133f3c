package etcd_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/etcd"
	"github.com/tavernhq/tavern/queues/etcd/etcdtest"
)

func newEngine(tb testing.TB, endpoint, machine string, ttl time.Duration) *etcd.Engine {
	tb.Helper()
	e, err := etcd.New(etcd.Config{Endpoints: []string{endpoint}, Prefix: "/t/" + tb.Name() + "/", LeaseTTL: ttl, OpTimeout: 5 * time.Second}, machine)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	return e
}

// waitFor polls cond (a remote state: no event to wait on) until it holds
// or the deadline passes.
func waitFor(tb testing.TB, what string, d time.Duration, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// N engines (N clients, as N machines would have) race for one key:
// exactly one wins, every other sees who holds it.
func TestClaimRaceExactlyOne(t *testing.T) {
	srv := etcdtest.Start(t)
	const n = 8
	var engines []*etcd.Engine
	for i := 0; i < n; i++ {
		engines = append(engines, newEngine(t, srv.Client, "m"+string(rune('a'+i)), 5*time.Second))
	}
	for round := 0; round < 5; round++ {
		key := "items/q/race" + string(rune('0'+round))
		var wg sync.WaitGroup
		grants := make([]queues.Grant, n)
		errs := make([]error, n)
		for i, e := range engines {
			wg.Add(1)
			go func(i int, e *etcd.Engine) {
				defer wg.Done()
				grants[i], errs[i] = e.Claim(context.Background(), key, queues.ClaimRequest{Holder: "w", TTL: 5 * time.Second, Live: i%2 == 0})
			}(i, e)
		}
		wg.Wait()
		won := 0
		for i := range engines {
			switch {
			case errs[i] == nil:
				won++
				if grants[i].Fence <= 0 || grants[i].Attempts != 1 {
					t.Errorf("grant %+v", grants[i])
				}
			case errors.Is(errs[i], queues.ErrHeld):
				var he *queues.HeldError
				if !errors.As(errs[i], &he) || he.Machine == "" {
					t.Errorf("held error without holder: %v", errs[i])
				}
			default:
				t.Errorf("engine %d: %v", i, errs[i])
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d winners, want 1", round, won)
		}
	}
}

// A claim whose lease runs out comes back; the new claim has a higher
// fence; the old holder's completion is refused by the fence; a finished
// key can never be claimed again until reopened.
func TestFenceRefusesLateCompletion(t *testing.T) {
	srv := etcdtest.Start(t)
	a := newEngine(t, srv.Client, "a", 5*time.Second)
	b := newEngine(t, srv.Client, "b", 5*time.Second)
	ctx := context.Background()
	key := "items/q/x"
	g1, err := a.Claim(ctx, key, queues.ClaimRequest{Holder: "wa", TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Claim(ctx, key, queues.ClaimRequest{Holder: "wb", TTL: time.Second}); !errors.Is(err, queues.ErrHeld) {
		t.Fatalf("second claim: %v, want ErrHeld", err)
	}
	waitFor(t, "the lease to run out", 15*time.Second, func() bool {
		st, err := b.State(ctx, key)
		return err == nil && !st.Held
	})
	g2, err := b.Claim(ctx, key, queues.ClaimRequest{Holder: "wb", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if g2.Fence <= g1.Fence || g2.Attempts != 2 {
		t.Fatalf("second grant %+v after %+v: want a higher fence and attempt 2", g2, g1)
	}
	for name, err := range map[string]error{
		"finish":  a.Finish(ctx, key, g1.Fence, "done", "late"),
		"renew":   a.Renew(ctx, key, g1.Fence, time.Second),
		"release": a.Release(ctx, key, g1.Fence, true),
	} {
		if !errors.Is(err, queues.ErrLostClaim) {
			t.Errorf("late %s: %v, want ErrLostClaim", name, err)
		}
	}
	if err := b.Renew(ctx, key, g2.Fence, time.Second); err != nil {
		t.Fatalf("renew by the holder: %v", err)
	}
	if err := b.Finish(ctx, key, g2.Fence, "done", "ok"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Claim(ctx, key, queues.ClaimRequest{Holder: "wa", TTL: time.Second}); !errors.Is(err, queues.ErrFinished) {
		t.Fatalf("claim of a finished key: %v, want ErrFinished", err)
	}
	st, err := a.State(ctx, key)
	if err != nil || st.Finished != "done" || st.FinishedBy != g2.Fence || st.Result != "ok" {
		t.Fatalf("state %+v %v", st, err)
	}
	if err := a.Reopen(ctx, key); err != nil {
		t.Fatal(err)
	}
	g3, err := newEngine(t, srv.Client, "c", 5*time.Second).Claim(ctx, key, queues.ClaimRequest{Holder: "wc", TTL: time.Second})
	if err != nil || g3.Attempts != 1 {
		t.Fatalf("claim after reopen: %+v %v", g3, err)
	}
}

// Live claims ride the process's session lease: while it is kept alive
// the claim stays past its own TTL; once the keep-alive stops (the
// process died, here: Close) the claim is gone one session TTL later.
func TestLiveClaimEndsWithItsSession(t *testing.T) {
	srv := etcdtest.Start(t)
	a := newEngine(t, srv.Client, "a", 2*time.Second)
	b := newEngine(t, srv.Client, "b", 2*time.Second)
	ctx := context.Background()
	g, err := a.Claim(ctx, "items/q/live", queues.ClaimRequest{Holder: "wa", TTL: time.Second, Live: true})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // longer than every TTL involved: the keep-alive must have run
	if st, err := b.State(ctx, "items/q/live"); err != nil || !st.Held || st.Fence != g.Fence {
		t.Fatalf("live claim after 3s: %+v %v", st, err)
	}
	a.Close()
	waitFor(t, "the dead session's claim to end", 15*time.Second, func() bool {
		st, err := b.State(ctx, "items/q/live")
		return err == nil && !st.Held
	})
}

// An engine behind a cut connection fails its calls with ErrUnavailable
// (it never claims without arbitration), and after the partition heals,
// its claim, expired meanwhile and taken by another machine, is refused.
func TestPartitionedEngine(t *testing.T) {
	srv := etcdtest.Start(t)
	px := etcdtest.NewProxy(t, srv.Client)
	e, err := etcd.New(etcd.Config{Endpoints: []string{px.Addr}, Prefix: "/t/part/", LeaseTTL: 2 * time.Second, OpTimeout: 2 * time.Second}, "p")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	other2, err := etcd.New(etcd.Config{Endpoints: []string{srv.Client}, Prefix: "/t/part/", OpTimeout: 2 * time.Second}, "o")
	if err != nil {
		t.Fatal(err)
	}
	defer other2.Close()
	ctx := context.Background()
	g, err := e.Claim(ctx, "items/q/p", queues.ClaimRequest{Holder: "wp", Live: true})
	if err != nil {
		t.Fatal(err)
	}
	px.Cut()
	if _, err := e.Claim(ctx, "items/q/p2", queues.ClaimRequest{Holder: "wp", TTL: time.Second}); !errors.Is(err, queues.ErrUnavailable) {
		t.Fatalf("claim while partitioned: %v, want ErrUnavailable", err)
	}
	waitFor(t, "the partitioned session to expire", 20*time.Second, func() bool {
		st, err := other2.State(ctx, "items/q/p")
		return err == nil && !st.Held
	})
	g2, err := other2.Claim(ctx, "items/q/p", queues.ClaimRequest{Holder: "wo", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := other2.Finish(ctx, "items/q/p", g2.Fence, "done", ""); err != nil {
		t.Fatal(err)
	}
	px.Heal()
	var ferr error
	waitFor(t, "the healed engine to answer", 20*time.Second, func() bool {
		ferr = e.Finish(ctx, "items/q/p", g.Fence, "done", "late")
		return !errors.Is(ferr, queues.ErrUnavailable)
	})
	if !errors.Is(ferr, queues.ErrLostClaim) || !strings.Contains(ferr.Error(), "done") {
		t.Fatalf("late completion after the partition: %v, want ErrLostClaim (it is done)", ferr)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, cfg, want string
	}{
		{"no endpoints", "coordination: etcd\netcd:\n  prefix: /x/\n", "tavern.md:4:1: etcd.endpoints: missing"},
		{"password in file", "coordination: etcd\netcd:\n  endpoints: [a:1]\n  password: hunter2\n", "tavern.md:6:3: etcd.password: tavern.md is synced"},
		{"bad ttl", "coordination: etcd\netcd:\n  endpoints: [a:1]\n  lease_ttl: soon\n", `tavern.md:6:3: etcd.lease_ttl: "soon" is not a positive duration`},
		{"bad tls", "coordination: etcd\netcd:\n  endpoints: [a:1]\n  tls:\n    cert: /x\n", "tavern.md:6:3: etcd.tls: cert and key go together"},
		{"misspelt key", "coordination: etcd\netcd:\n  endpoints: [a:1]\n  lease_tll: 2s\n", "tavern.md:6:3: etcd.lease_tll: unknown setting (did you mean \"lease_ttl\"?"},
		{"misspelt tls key", "coordination: etcd\netcd:\n  endpoints: [a:1]\n  tls:\n    ca_file: /x\n", "tavern.md:7:5: etcd.tls.ca_file: unknown setting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), ".tavern")
			s, _, err := docstore.Init(dir, "t")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "tavern.md"), []byte("---\nname: t\n"+tc.cfg+"---\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = queues.OpenCoordinator(s)
			var ce *etcd.ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a ConfigError containing %q", err, tc.want)
			}
		})
	}
}

// Two clones of one store (copies of the same files, as after a git
// sync) share an etcd: an item claimed through one is skipped by the
// other, whose later completion attempt of a copy it never claimed is
// impossible, and a claim returned by its lease is taken by the other.
func TestBrokersOnTwoClones(t *testing.T) {
	srv := etcdtest.Start(t)
	root := t.TempDir()
	a := filepath.Join(root, "a", ".tavern")
	s, _, err := docstore.Init(a, "two")
	if err != nil {
		t.Fatal(err)
	}
	cfg := "---\nname: two\ncoordination: etcd\netcd:\n  endpoints: [" + srv.Client + "]\n  lease_ttl: 2s\n---\n"
	if err := os.WriteFile(filepath.Join(a, "tavern.md"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ba, err := queues.Open(s, queues.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ba.Close()
	if ba.Coordinator() == nil || ba.Coordinator().Engine() != "etcd" {
		t.Fatalf("coordinator %v", ba.Coordinator())
	}
	if _, err := ba.CreateQueue("q", queues.QueueOptions{Lease: time.Second}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := 0; i < 2; i++ {
		it, err := ba.Add("q", queues.AddOptions{Title: "t"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, it.ID)
	}
	b := filepath.Join(root, "b", ".tavern")
	os.MkdirAll(filepath.Dir(b), 0o755)
	if out, err := exec.Command("cp", "-a", a, b).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	os.Remove(filepath.Join(b, queues.MachineFile))
	sb, err := docstore.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	bb, err := queues.Open(sb, queues.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bb.Close()
	if ba.Coordinator().Machine() == bb.Coordinator().Machine() {
		t.Fatalf("two clones share machine name %q", ba.Coordinator().Machine())
	}
	ctx := context.Background()
	c1, err := ba.Take(ctx, queues.TakeOptions{Queues: []string{"q"}})
	if err != nil {
		t.Fatal(err)
	}
	c2, err := bb.Take(ctx, queues.TakeOptions{Queues: []string{"q"}})
	if err != nil {
		t.Fatal(err)
	}
	if c1.ID == c2.ID {
		t.Fatalf("both clones claimed %s", c1.ID)
	}
	if c1.ID != ids[0] || c1.Doc.String("claim_machine") != ba.Coordinator().Machine() {
		t.Fatalf("first claim %s machine %q", c1.ID, c1.Doc.String("claim_machine"))
	}
	if _, err := c2.Complete("b did it"); err != nil {
		t.Fatal(err)
	}
	// a's lease-only claim of ids[0] runs out (1s lease); b's reaper
	// then sees its own pending copy... b never had it claimed: b takes
	// it once the engine frees it.
	var c3 *queues.Claim
	waitFor(t, "clone b to take the expired claim", 20*time.Second, func() bool {
		c, err := bb.Take(ctx, queues.TakeOptions{Queues: []string{"q"}})
		if err != nil {
			return false
		}
		if c.ID != ids[0] {
			c.Release()
			return false
		}
		c3 = c
		return true
	})
	if c3.Attempt <= c1.Attempt {
		t.Fatalf("fence %d after %d", c3.Attempt, c1.Attempt)
	}
	if _, err := c1.Complete("late"); !errors.Is(err, queues.ErrStale) {
		t.Fatalf("late completion on a: %v, want ErrStale", err)
	}
	// a's copy is still claimed/ (the fence refused the move); its reaper
	// returns it to pending/, where the engine says it is held elsewhere.
	if _, err := ba.Reap("q"); err != nil {
		t.Fatal(err)
	}
	it, err := ba.Get(ids[0])
	if err != nil || it.State != queues.Pending {
		t.Fatalf("a's copy after reap: %+v %v", it, err)
	}
	if _, err := c3.Complete("b again"); err != nil {
		t.Fatal(err)
	}
	_, err = ba.Take(ctx, queues.TakeOptions{Queues: []string{"q"}})
	var ee *queues.EmptyError
	if !errors.As(err, &ee) || ee.Diag.Elsewhere == 0 {
		t.Fatalf("take on a after b finished: %v, want empty with items finished elsewhere", err)
	}
}

// tavern.md's TLS and auth options against an etcd that serves TLS only,
// requires client certificates and has authentication enabled: with the
// CA, the client's certificate and the password (from the variable
// password_env names) claims work; a wrong password or a missing client
// certificate fails, naming the engine as unavailable, and claims nothing.
func TestTLSAndAuth(t *testing.T) {
	srv := etcdtest.StartTLS(t)
	tlsCfg := func() *tls.Config {
		pair, err := tls.LoadX509KeyPair(srv.Cert, srv.Key)
		if err != nil {
			t.Fatal(err)
		}
		pem, _ := os.ReadFile(srv.CA)
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}
	}
	admin, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Client}, TLS: tlsCfg(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, step := range []func() error{
		func() error { _, err := admin.UserAdd(ctx, "root", "s3cret"); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := admin.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatalf("setting up etcd auth: %v", err)
		}
	}
	open := func(tlsYAML, password string) (queues.Coordinator, error) {
		t.Helper()
		dir := filepath.Join(t.TempDir(), ".tavern")
		s, _, err := docstore.Init(dir, "t")
		if err != nil {
			t.Fatal(err)
		}
		cfg := "---\nname: t\ncoordination: etcd\netcd:\n  endpoints: [" + srv.Client + "]\n  op_timeout: 3s\n  dial_timeout: 3s\n" +
			"  username: root\n  password_env: TAVERN_TEST_ETCD_PASSWORD\n  tls: " + tlsYAML + "\n---\n"
		if err := os.WriteFile(filepath.Join(dir, "tavern.md"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv("TAVERN_TEST_ETCD_PASSWORD", password)
		c, err := queues.OpenCoordinator(s)
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { c.Close() })
		_, err = c.Claim(ctx, "items/q/k", queues.ClaimRequest{Holder: "w", TTL: time.Minute})
		return c, err
	}
	full := "{ca: " + srv.CA + ", cert: " + srv.Cert + ", key: " + srv.Key + "}"
	if _, err := open(full, "wrong"); err == nil || !errors.Is(err, queues.ErrUnavailable) {
		t.Fatalf("claim with a wrong password: %v (want the engine unavailable)", err)
	}
	if _, err := open("{ca: "+srv.CA+"}", "s3cret"); err == nil || !errors.Is(err, queues.ErrUnavailable) {
		t.Fatalf("claim without a client certificate: %v (want the engine unavailable)", err)
	}
	c, err := open(full, "s3cret")
	if err != nil {
		t.Fatalf("claim with TLS and the password: %v", err)
	}
	if c.Engine() != "etcd" {
		t.Fatalf("engine %s", c.Engine())
	}
	// The claim is in etcd.
	root, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Client}, TLS: tlsCfg(), DialTimeout: 5 * time.Second,
		Username: "root", Password: "s3cret", Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	resp, err := root.Get(ctx, "/tavern/t/claim/", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Key) != "/tavern/t/claim/items/q/k" {
		t.Fatalf("claims in etcd: %v %v", resp, err)
	}
}

// A renewal for a longer TTL than the claim's lease was granted makes
// the engine hold the claim that long, under the same fence, and
// ListLeases (on another engine, as another machine lists) says so: a
// keep-alive would have restarted the first TTL only, and List says
// nothing of a lease's end.
func TestRenewLongerTTL(t *testing.T) {
	srv := etcdtest.Start(t)
	a := newEngine(t, srv.Client, "ma", 5*time.Second)
	b := newEngine(t, srv.Client, "mb", 5*time.Second)
	ctx := context.Background()
	key := "reservations/alice/x"
	g, err := a.Claim(ctx, key, queues.ClaimRequest{Holder: "alice", TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Renew(ctx, key, g.Fence, time.Hour); err != nil {
		t.Fatal(err)
	}
	got, err := b.ListLeases(ctx, "reservations/")
	if err != nil {
		t.Fatal(err)
	}
	st := got[key]
	if !st.Held || st.Fence != g.Fence || time.Until(st.LeaseUntil) < time.Hour-5*time.Second {
		t.Fatalf("after a renewal for 1h: %+v; want held by fence %d until about an hour from now", st, g.Fence)
	}
	// The same TTL again is a keep-alive of the new lease.
	if err := a.Renew(ctx, key, g.Fence, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, key, g.Fence, false); err != nil {
		t.Fatalf("release after the renewals: %v", err)
	}
}

// A listing (queues.ForListing) gives up at once on an etcd it cannot
// connect to, instead of waiting the op timeout, and lists again once
// etcd is back (a long-lived process is not told "down" for ever).
func TestListingGivesUpFast(t *testing.T) {
	srv := etcdtest.Start(t)
	p := etcdtest.NewProxy(t, srv.Client)
	p.Cut()
	e := newEngine(t, p.Addr, "ma", 5*time.Second)
	ctx := queues.ForListing(context.Background())
	for _, what := range []string{"first", "second"} {
		start := time.Now()
		_, err := e.List(ctx, "items/")
		if !errors.Is(err, queues.ErrUnavailable) || time.Since(start) > 2*time.Second {
			t.Fatalf("%s list with etcd cut off: %v after %v; want ErrUnavailable within 2s", what, err, time.Since(start))
		}
	}
	p.Heal()
	waitFor(t, "a listing after the heal", 20*time.Second, func() bool {
		_, err := e.List(ctx, "items/")
		return err == nil
	})
}
