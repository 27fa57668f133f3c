package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher"
)

// Handler answers one op from the projection p, which is current to
// every change made before the request. info is marshalled as JSON;
// payload is sent as is.
type Handler func(ctx context.Context, p *watcher.Projection, args json.RawMessage) (info any, payload []byte, err error)

// Options configure Start.
type Options struct {
	// Handlers by op name. "status" and "stop" are the server's own.
	Handlers map[string]Handler
	// Who names the serving process in Status ("tavern watch").
	Who string
	// Explicit: this process exists to serve (tavern daemon). Only then
	// does "stop" work: OnStop is called after the answer is sent.
	Explicit bool
	OnStop   func()
	// Retry is how often a process that is not the daemon tries to
	// become it (default 2s).
	Retry time.Duration
	// SyncTimeout bounds the projection's sync for one request (default
	// 5s); a client's own timeout is usually shorter.
	SyncTimeout time.Duration
	// OnError, if set, is told about failures to serve (a socket that
	// cannot be bound); serving is retried.
	OnError func(error)
}

// Server serves a projection's queries while this process holds the
// daemon lock.
type Server struct {
	p       *watcher.Projection
	root    string
	opt     Options
	dev     uint64
	ino     uint64
	started time.Time

	gen    atomic.Uint64
	served atomic.Uint64

	mu      sync.Mutex
	lockFD  int // -1 when not held
	ln      *net.UnixListener
	sockIno uint64 // the inode of the socket we renamed into place
	closed  bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start serves p's queries as the store's daemon, now if no other process
// does, else as soon as it stops (tried every opt.Retry). p must watch
// the whole store with kernel events (not scoped, not polling).
func Start(p *watcher.Projection, opt Options) (*Server, error) {
	if !p.Watching() || p.Scoped() || p.Polling() {
		return nil, ErrNotServable
	}
	if opt.Retry <= 0 {
		opt.Retry = 2 * time.Second
	}
	if opt.SyncTimeout <= 0 {
		opt.SyncTimeout = 5 * time.Second
	}
	root := p.Root()
	dev, ino, err := identity(root)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{p: p, root: root, opt: opt, dev: dev, ino: ino, started: time.Now().UTC(), lockFD: -1, ctx: ctx, cancel: cancel}
	if err := s.tryServe(); err != nil {
		s.report(err)
	}
	s.wg.Add(1)
	go s.retry()
	return s, nil
}

// Serving reports whether this process is the daemon now.
func (s *Server) Serving() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ln != nil
}

// Close stops serving: the socket is removed (if it is still ours) and
// the lock released, so another process can take over.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.stopServing()
	s.wg.Wait()
	return nil
}

func (s *Server) report(err error) {
	if err != nil && s.opt.OnError != nil {
		s.opt.OnError(err)
	}
}

func (s *Server) retry() {
	defer s.wg.Done()
	t := time.NewTicker(s.opt.Retry)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		if s.p.Polling() {
			// Degraded to polling since: a sync can no longer prove
			// freshness.
			s.stopServing()
			continue
		}
		if !s.Serving() {
			s.report(s.tryServe())
		}
	}
}

// tryServe takes the lock if free and binds the socket.
func (s *Server) tryServe() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.ln != nil {
		return nil
	}
	lockPath := filepath.Join(s.root, LockFile)
	if err := os.MkdirAll(filepath.Dir(lockPath), 0o755); err != nil {
		return err
	}
	fd, err := unix.Open(lockPath, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil // another process serves
		}
		return err
	}
	ln, ino, err := s.bind()
	if err != nil {
		unix.Flock(fd, unix.LOCK_UN)
		unix.Close(fd)
		return err
	}
	s.lockFD, s.ln, s.sockIno = fd, ln, ino
	s.wg.Add(1)
	go s.accept(ln)
	return nil
}

// bind listens on a temporary name and renames it over SocketName: a
// socket left by a dead daemon is replaced, and clients never see none.
func (s *Server) bind() (*net.UnixListener, uint64, error) {
	tmp := tempSockName()
	_ = os.Remove(filepath.Join(s.root, tmp))
	addr, done, err := sockAddr(s.root, tmp)
	if err != nil {
		return nil, 0, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	done()
	if err != nil {
		return nil, 0, err
	}
	ln.SetUnlinkOnClose(false)
	final := filepath.Join(s.root, SocketName)
	if err := os.Rename(filepath.Join(s.root, tmp), final); err != nil {
		ln.Close()
		os.Remove(filepath.Join(s.root, tmp))
		return nil, 0, err
	}
	var st unix.Stat_t
	if err := unix.Lstat(final, &st); err != nil {
		ln.Close()
		return nil, 0, err
	}
	return ln, st.Ino, nil
}

func (s *Server) stopServing() {
	s.mu.Lock()
	ln, fd, ino := s.ln, s.lockFD, s.sockIno
	s.ln, s.lockFD = nil, -1
	s.mu.Unlock()
	if ln == nil {
		return
	}
	// Remove the socket only if it is still ours (we hold the lock, so
	// no other server can have replaced it, but a person may have), and
	// before the listener closes: once nothing answers, the socket is
	// gone (tavern daemon stop returns when nothing answers).
	final := filepath.Join(s.root, SocketName)
	var st unix.Stat_t
	if unix.Lstat(final, &st) == nil && st.Ino == ino {
		os.Remove(final)
	}
	ln.Close()
	unix.Flock(fd, unix.LOCK_UN)
	unix.Close(fd)
}

func (s *Server) accept(ln *net.UnixListener) {
	defer s.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return // closed
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer conn.Close()
			s.handle(conn)
		}()
	}
}

// connTimeout bounds one connection (a client that stops reading).
const connTimeout = 30 * time.Second

func (s *Server) handle(conn net.Conn) {
	conn.SetDeadline(time.Now().Add(connTimeout))
	r := bufio.NewReaderSize(conn, 4096)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return
	}
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		s.answer(conn, Header{Error: "bad request: " + err.Error()}, nil)
		return
	}
	if req.V != Version {
		s.answer(conn, Header{Error: fmt.Sprintf("protocol version %d, this daemon speaks %d", req.V, Version)}, nil)
		return
	}
	if err := s.sameStore(req.Dev, req.Ino); err != nil {
		s.answer(conn, Header{Error: err.Error()}, nil)
		return
	}
	switch req.Op {
	case "status":
		st := Status{PID: os.Getpid(), Who: s.opt.Who, Root: s.root, Started: schema.TimeOf(s.started), Docs: s.p.Len(),
			Mode: s.p.Mode(), Gen: s.gen.Load(), Served: s.served.Load(), Explicit: s.opt.Explicit}
		s.reply(conn, 0, st, nil)
		return
	case "stop":
		if !s.opt.Explicit {
			s.answer(conn, Header{Error: fmt.Sprintf("served by %s (pid %d), which does not stop on request: stop that process", s.opt.Who, os.Getpid())}, nil)
			return
		}
		s.reply(conn, 0, nil, nil)
		if s.opt.OnStop != nil {
			go s.opt.OnStop()
		}
		return
	}
	h, ok := s.opt.Handlers[req.Op]
	if !ok {
		s.answer(conn, Header{Error: fmt.Sprintf("unknown op %q", req.Op)}, nil)
		return
	}
	if s.p.Polling() {
		s.answer(conn, Header{Error: "the projection polls: it cannot prove it is current"}, nil)
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.opt.SyncTimeout)
	defer cancel()
	if err := s.p.Sync(ctx); err != nil {
		s.answer(conn, Header{Error: "sync: " + err.Error()}, nil)
		return
	}
	gen := s.gen.Add(1)
	info, payload, err := h(ctx, s.p, req.Args)
	if err != nil {
		s.answer(conn, Header{Error: err.Error()}, nil)
		return
	}
	s.served.Add(1)
	s.reply(conn, gen, info, payload)
}

// sameStore checks the client's store against ours, and that our root
// path still leads to the directory we watch.
func (s *Server) sameStore(dev, ino uint64) error {
	if dev != s.dev || ino != s.ino {
		return errors.New("another store")
	}
	d, i, err := identity(s.root)
	if err != nil || d != s.dev || i != s.ino {
		return errors.New("the store this daemon watches was moved or replaced")
	}
	return nil
}

func (s *Server) reply(conn net.Conn, gen uint64, info any, payload []byte) {
	h := Header{Gen: gen}
	if info != nil {
		b, err := json.Marshal(info)
		if err != nil {
			s.answer(conn, Header{Error: err.Error()}, nil)
			return
		}
		h.Info = b
	}
	s.answer(conn, h, payload)
}

func (s *Server) answer(conn net.Conn, h Header, payload []byte) {
	h.V = Version
	h.N = len(payload)
	line, _ := json.Marshal(h)
	bw := bufio.NewWriterSize(conn, 64<<10)
	bw.Write(line)
	bw.WriteByte('\n')
	bw.Write(payload)
	bw.Flush()
}
