// Package gittest serves bare git repositories over git://127.0.0.1 with
// a real `git daemon` (receive-pack enabled), for tests of the git sync
// and the git coordination engine.
package gittest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Server is a running git daemon.
type Server struct {
	Base string // directory the daemon serves
	Port int
	cmd  *exec.Cmd
	log  *bytes.Buffer
}

// Start runs git daemon on a free loopback port serving a new temporary
// directory, until the test ends; also on the same port of each of hosts
// (other addresses of this machine, such as the host ends of network
// namespaces' links). It skips the test if git is missing.
func Start(tb testing.TB, hosts ...string) *Server {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		tb.Skip("git is not installed")
	}
	base := tb.TempDir()
	for try := 0; try < 5; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		log := &bytes.Buffer{}
		args := []string{"daemon", "--reuseaddr", "--listen=127.0.0.1"}
		for _, h := range hosts {
			args = append(args, "--listen="+h)
		}
		args = append(args, fmt.Sprintf("--port=%d", port), "--base-path="+base, "--export-all", "--enable=receive-pack",
			"--informative-errors", "--max-connections=0", base)
		cmd := exec.Command("git", args...)
		cmd.Stdout, cmd.Stderr = log, log
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
		// `git daemon` runs git-daemon as a child of git: a group of
		// its own is killed whole (killing git alone leaked git-daemon,
		// one per test, listening on after the run).
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		deadline := time.Now().Add(10 * time.Second)
	wait:
		for time.Now().Before(deadline) {
			c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
			if err == nil {
				c.Close()
				s := &Server{Base: base, Port: port, cmd: cmd, log: log}
				tb.Cleanup(s.Stop)
				return s
			}
			select {
			case <-exited:
				break wait // the port was taken meanwhile: another one
			case <-time.After(20 * time.Millisecond):
			}
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	tb.Fatal("git daemon did not start")
	return nil
}

// Repo creates a bare repository name.git and returns its git:// URL.
func (s *Server) Repo(tb testing.TB, name string) string {
	tb.Helper()
	dir := filepath.Join(s.Base, name+".git")
	if out, err := exec.Command("git", "init", "--bare", "--quiet", dir).CombinedOutput(); err != nil {
		tb.Fatalf("git init: %v %s", err, out)
	}
	return s.URL("127.0.0.1", name)
}

// URL is the git:// URL of repository name at host (one Start listens on).
func (s *Server) URL(host, name string) string {
	return fmt.Sprintf("git://%s/%s.git", net.JoinHostPort(host, fmt.Sprint(s.Port)), name)
}

// Stop kills the daemon.
func (s *Server) Stop() {
	if s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	}
}
