// Package etcdtest starts a real etcd server (Debian's etcd-server
// package, the `etcd` binary) on free loopback ports for tests, and a TCP
// proxy in front of it that a test can cut to partition one client.
//
// The server runs with a short election timeout so leases can be as
// short as one second, and keeps its data on tmpfs (/dev/shm) when there
// is one: etcd 3.4 has no --unsafe-no-fsync, and a test must not load
// the shared disk. Tests that need it call Start, which skips the test
// with a clear message when no etcd binary is installed (.ci/run installs
// it).
package etcdtest

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is a running etcd.
type Server struct {
	Client string // host:port of the client URL on 127.0.0.1
	Port   int    // the client port, on 127.0.0.1 and every host given to Start
	// With StartTLS: PEM files of the CA that signed the server's and the
	// client's certificates, and the client's certificate and key.
	CA, Cert, Key string
	cmd           *exec.Cmd
	log           *bytes.Buffer
	dir           string
	tls           *tls.Config // the client side, for the health check
}

// Binary returns the etcd binary, or "" when none is installed.
func Binary() string {
	if p := os.Getenv("TAVERN_ETCD_BIN"); p != "" {
		return p
	}
	p, err := exec.LookPath("etcd")
	if err != nil {
		return ""
	}
	return p
}

func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start starts etcd and stops it when the test ends, its data in a
// temporary directory on tmpfs if there is one. It serves clients on
// 127.0.0.1 and on each of hosts (other addresses of this machine, such
// as the host ends of network namespaces' links).
func Start(tb testing.TB, hosts ...string) *Server {
	tb.Helper()
	bin := Binary()
	if bin == "" {
		tb.Skip("etcd is not installed: apt-get install etcd-server (.ci/run does)")
	}
	base := ""
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		base = "/dev/shm"
	}
	dir, err := os.MkdirTemp(base, "tavern-etcd-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return startIn(tb, bin, dir, hosts, nil)
}

// StartTLS starts etcd serving clients over TLS only, with client
// certificates required (--client-cert-auth): the CA and the client's
// certificate and key are in s.CA, s.Cert and s.Key (made for the test).
func StartTLS(tb testing.TB) *Server {
	tb.Helper()
	bin := Binary()
	if bin == "" {
		tb.Skip("etcd is not installed: apt-get install etcd-server (.ci/run does)")
	}
	dir := tb.TempDir()
	c, err := newCerts(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return startIn(tb, bin, dir, nil, c)
}

func startIn(tb testing.TB, bin, dir string, hosts []string, c *certs) *Server {
	tb.Helper()
	var last error
	for try := 0; try < 5; try++ {
		s, err := start(bin, dir, freePort(tb), freePort(tb), hosts, c)
		if err == nil {
			tb.Cleanup(s.Stop)
			return s
		}
		last = err
	}
	tb.Fatalf("etcd did not start: %v", last)
	return nil
}

func start(bin, dir string, cport, pport int, hosts []string, c *certs) (*Server, error) {
	scheme := "http://"
	if c != nil {
		scheme = "https://"
	}
	client := fmt.Sprintf("127.0.0.1:%d", cport)
	listen := scheme + client
	for _, h := range hosts {
		listen += "," + scheme + net.JoinHostPort(h, fmt.Sprint(cport))
	}
	peer := fmt.Sprintf("http://127.0.0.1:%d", pport)
	data := filepath.Join(dir, fmt.Sprintf("data-%d", cport))
	args := []string{"--name", "t", "--data-dir", data,
		"--listen-client-urls", listen, "--advertise-client-urls", scheme + client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "t=" + peer, "--heartbeat-interval", "50", "--election-timeout", "500",
		"--log-level", "error", "--logger", "zap"}
	if c != nil {
		args = append(args, "--cert-file", c.serverCert, "--key-file", c.serverKey,
			"--trusted-ca-file", c.ca, "--client-cert-auth")
	}
	cmd := exec.Command(bin, args...)
	log := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{Client: client, Port: cport, cmd: cmd, log: log, dir: data}
	if c != nil {
		s.CA, s.Cert, s.Key, s.tls = c.ca, c.clientCert, c.clientKey, c.clientTLS
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return nil, fmt.Errorf("etcd exited: %v: %s", err, log.String())
		default:
		}
		if healthy(client, s.tls) {
			go func() { <-exited }()
			return s, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill()
	return nil, fmt.Errorf("etcd not healthy after 20s: %s", log.String())
}

// healthy asks the server's /health endpoint (plain HTTP on the client
// port) whether it has a leader.
func healthy(client string, tc *tls.Config) bool {
	var c net.Conn
	var err error
	d := &net.Dialer{Timeout: time.Second}
	if tc != nil {
		c, err = tls.DialWithDialer(d, "tcp", client, tc)
	} else {
		c, err = d.Dial("tcp", client)
	}
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	fmt.Fprintf(c, "GET /health HTTP/1.0\r\nHost: %s\r\n\r\n", client)
	b, _ := io.ReadAll(c)
	return strings.Contains(string(b), `"health":"true"`)
}

// Stop kills the server.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = syscall.Kill(s.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// Proxy forwards TCP connections to a target; Cut drops every connection
// and refuses new ones until Heal: a network partition of whoever dials
// Addr, while everyone dialing the target directly is unaffected.
type Proxy struct {
	Addr   string
	target string
	l      net.Listener
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]bool
}

// ClientOn is the client address at host (one Start listens on).
func (s *Server) ClientOn(host string) string { return net.JoinHostPort(host, fmt.Sprint(s.Port)) }

// NewProxy listens on a free loopback port and forwards to target.
func NewProxy(tb testing.TB, target string) *Proxy { return NewProxyOn(tb, "127.0.0.1", target) }

// NewProxyOn is NewProxy listening on host (an address of this machine).
func NewProxyOn(tb testing.TB, host, target string) *Proxy {
	tb.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{Addr: l.Addr().String(), target: target, l: l, conns: map[net.Conn]bool{}}
	go p.serve()
	tb.Cleanup(func() { l.Close(); p.Cut() })
	return p
}

func (p *Proxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.mu.Unlock()
		go p.pipe(c)
	}
}

func (p *Proxy) pipe(c net.Conn) {
	u, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		c.Close()
		u.Close()
		return
	}
	p.conns[c], p.conns[u] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		io.Copy(dst, src)
		dst.Close()
		src.Close()
		done <- struct{}{}
	}
	go cp(u, c)
	go cp(c, u)
	<-done
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, u)
	p.mu.Unlock()
}

// Cut drops every proxied connection and refuses new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// Heal accepts connections again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}
