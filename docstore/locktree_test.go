package docstore

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHelperLockTree is not a test: a process that takes an inheritable
// lock, starts `sleep` with the descriptor, prints the sleeper's pid and
// waits to be killed.
func TestHelperLockTree(t *testing.T) {
	dir := os.Getenv("TAVERN_LOCKTREE_STORE")
	if dir == "" {
		t.Skip("helper process")
	}
	s, err := Open(dir)
	if err != nil {
		os.Exit(2)
	}
	l, ok, err := s.TryLockInheritable("instances/x")
	if err != nil || !ok {
		os.Exit(3)
	}
	cmd := exec.Command("sleep", "60")
	cmd.ExtraFiles = []*os.File{l.File()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		os.Exit(4)
	}
	os.Stdout.WriteString(strconv.Itoa(cmd.Process.Pid) + "\n")
	select {}
}

// An inheritable lock stays held while any process holding its
// descriptor lives, even after the process that took it was SIGKILLed;
// LockHolders names exactly those processes; once they are gone the lock
// can be taken.
func TestInheritedLockOutlivesItsTaker(t *testing.T) {
	s := mustInitStore(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperLockTree$")
	cmd.Env = append(os.Environ(), "TAVERN_LOCKTREE_STORE="+s.Root())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("helper: %v", err)
	}
	sleeper, _ := strconv.Atoi(strings.TrimSpace(line))
	defer syscall.Kill(sleeper, syscall.SIGKILL)
	holders, err := s.LockHolders("instances/x")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(holders)
	want := []int{cmd.Process.Pid, sleeper}
	slices.Sort(want)
	if !slices.Equal(holders, want) {
		t.Fatalf("holders = %v, want taker and sleeper %v", holders, want)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if l, ok, err := s.TryLock("instances/x"); err != nil || ok {
		l.Unlock()
		t.Fatalf("lock free (%v, %v) after its taker died while the inheriting child lives", ok, err)
	}
	// This process has the file open too now (the Store's lock cache),
	// but not locked: it is no holder.
	if holders, _ := s.LockHolders("instances/x"); !slices.Equal(holders, []int{sleeper}) {
		t.Fatalf("holders after the taker died = %v, want [%d]", holders, sleeper)
	}
	syscall.Kill(sleeper, syscall.SIGKILL)
	// The sleeper is the helper's child, reparented to init (or a
	// subreaper): wait for the lock, not for the process.
	deadline := time.Now().Add(30 * time.Second)
	for {
		l, ok, err := s.TryLock("instances/x")
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			l.Unlock()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("lock still held after every holder was killed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// HandOff leaves the lock held by a descriptor inherited elsewhere (here a
// dup standing for the child's); AdoptLock takes that descriptor over,
// and refuses one that is not the lock's file or does not hold it.
func TestHandOffAndAdoptLock(t *testing.T) {
	s := mustInitStore(t)
	l, ok, err := s.TryLockInheritable("agents/a")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	fd, err := syscall.Dup(int(l.File().Fd()))
	if err != nil {
		t.Fatal(err)
	}
	child := os.NewFile(uintptr(fd), "inherited")
	if err := l.HandOff(); err != nil {
		t.Fatal(err)
	}
	if free, _ := s.LockFree("agents/a"); free {
		t.Fatal("the lock went with the taker's descriptor")
	}
	// Another lock's file, and the right file without the lock: refused.
	other, _, err := s.TryLockInheritable("agents/b")
	if err != nil {
		t.Fatal(err)
	}
	odup, _ := syscall.Dup(int(other.File().Fd()))
	if _, err := s.AdoptLock("agents/a", os.NewFile(uintptr(odup), "other")); !errors.Is(err, ErrLost) {
		t.Errorf("adopting another lock's file: %v, want ErrLost", err)
	}
	plain, err := os.Open(filepath.Join(s.Root(), ".locks", "agents", "a.lock"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AdoptLock("agents/a", plain); !errors.Is(err, ErrLost) {
		t.Errorf("adopting a descriptor that does not hold the lock: %v, want ErrLost", err)
	}
	adopted, err := s.AdoptLock("agents/a", child)
	if err != nil {
		t.Fatal(err)
	}
	if free, _ := s.LockFree("agents/a"); free {
		t.Fatal("the adopted lock is free")
	}
	adopted.Unlock()
	if free, _ := s.LockFree("agents/a"); !free {
		t.Fatal("the lock is held after the adopter let go")
	}
	other.Unlock()
}
