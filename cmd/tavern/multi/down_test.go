package multi

import (
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// silentListener accepts connections and never answers on them (an etcd
// whose host is up and hung, or a proxy in front of nothing): a client
// waits for the HTTP/2 handshake until its own deadline.
func silentListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// closedPort returns an address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// With etcd out of reach, the read-only listings (queue ls, reservations,
// token ls) warn and show this machine's state without waiting etcd's
// dial timeout (5s by default, which they used to wait every time): a
// port nothing listens on refuses at once, and an endpoint that accepts
// and never answers is given up after a second. Claims still wait.
func TestMultiListingsEngineDown(t *testing.T) {
	t.Parallel()
	m := &machine{name: "m0", dir: t.TempDir()}
	m.env = []string{"TAVERN_DIR=" + filepath.Join(m.dir, ".tavern"), "TAVERN_MACHINE=alpha"}
	ok := func(args ...string) {
		t.Helper()
		if r := m.run(t, "", nil, args...); r.code != 0 {
			t.Fatalf("tavern %s: %s", strings.Join(args, " "), r)
		}
	}
	ok("init")
	ok("set", "tavern.md", "coordination=etcd", "etcd={endpoints: ["+closedPort(t)+"]}")
	ok("queue", "create", "build")
	ok("queue", "add", "build", "--title", "one")
	for name, ep := range map[string]string{"refused": closedPort(t), "silent": silentListener(t)} {
		for _, args := range [][]string{{"queue", "ls"}, {"queue", "ls", "--json"}, {"reservations"}, {"token", "ls"}} {
			start := time.Now()
			r := m.run(t, "", []string{"TAVERN_ETCD_ENDPOINTS=" + ep}, args...)
			took := time.Since(start)
			if r.code != 0 || !strings.Contains(r.err, "coordination engine unavailable") {
				t.Errorf("%s: tavern %s: want exit 0 and a warning that the engine is unavailable: %s", name, strings.Join(args, " "), r)
			}
			// The dial timeout is 5s; a listing gives up after 1s.
			if took > 3*time.Second {
				t.Errorf("%s: tavern %s took %v with etcd out of reach", name, strings.Join(args, " "), took)
			}
			if args[0] == "queue" && !strings.Contains(r.out, "build") {
				t.Errorf("%s: tavern %s does not list the local queue: %s", name, strings.Join(args, " "), r)
			}
		}
	}
	// A claim is not a listing: it waits as long as etcd's settings say
	// (op_timeout 5s) before it fails, never sooner.
	start := time.Now()
	r := m.run(t, "", []string{"TAVERN_ETCD_ENDPOINTS=" + silentListener(t)}, "queue", "take", "build")
	if took := time.Since(start); r.code != 1 || took < 4*time.Second {
		t.Errorf("queue take with a silent etcd: want exit 1 after op_timeout (5s), got %v: %s", took, r)
	}
}
