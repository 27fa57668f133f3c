package queues

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// PeerCaller describes the process at the other end of a TCP connection
// from this machine (local and remote as the server sees them), so that a
// server deciding for a request (tavern serve) holds the sender to the
// rules of Approve and Reject, not itself. The process is found through
// /proc (Linux); nil where there is no /proc/net/tcp (the server then
// stands for the sender, as it does for another user's socket that it may
// not read). A sender of this user that cannot be found or read, or that
// hung up, gets a Caller whose Agent says so: a gate needs a known person.
func PeerCaller(local, remote net.Addr) *Caller {
	l, lok := local.(*net.TCPAddr)
	r, rok := remote.(*net.TCPAddr)
	if !lok || !rok {
		return nil
	}
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		return nil
	}
	inode, uid, ok := peerSocket(l, r)
	if !ok {
		return &Caller{Unknown: fmt.Sprintf("no socket of this machine is the sender %s", r)}
	}
	// A socket of another user (sshd forwarding a person's tunnel to a
	// serve run as an ordinary user) is not ours to read, and no agent
	// of this user can make one: the server stands for it, as beyond
	// loopback. One of this user that cannot be read is refused.
	otherUser := uid != os.Getuid()
	pid := socketOwner(inode)
	if pid == 0 {
		if otherUser {
			return nil
		}
		return &Caller{UID: uid, Unknown: fmt.Sprintf("no readable process holds the sender's socket (%s, uid %d)", r, uid)}
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		if otherUser {
			return nil
		}
		return &Caller{UID: uid, PID: pid, Unknown: fmt.Sprintf("the environment of the sender (process %d, uid %d) is unreadable", pid, uid)}
	}
	c := &Caller{UID: uid, PID: pid, Env: map[string]string{}}
	c.Host, _ = os.Hostname()
	for _, kv := range strings.Split(string(env), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case (k == "TAVERN_AGENT" || k == "TAVERN_INSTANCE") && v != "":
			c.Env[k] = v
		case k == "USER" || (k == "LOGNAME" && c.User == ""):
			c.User = v
		}
	}
	c.Ancestry = ancestry(pid)
	return c
}

// peerSocket finds the sender's end of the connection in /proc/net/tcp{,6}:
// its local address is the server's remote one and the other way round.
func peerSocket(l, r *net.TCPAddr) (inode string, uid int, ok bool) {
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 {
				continue
			}
			if !procAddrIs(fs[1], r) || !procAddrIs(fs[2], l) {
				continue
			}
			u, _ := strconv.Atoi(fs[7])
			f.Close()
			return fs[9], u, fs[9] != "0"
		}
		f.Close()
	}
	return "", 0, false
}

// procAddrIs reports whether a /proc/net/tcp address (hex IP in 32-bit
// words of the machine's byte order, a colon, hex port) is a.
func procAddrIs(s string, a *net.TCPAddr) bool {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil || int(port) != a.Port {
		return false
	}
	raw, err := hex.DecodeString(h)
	if err != nil || len(raw)%4 != 0 {
		return false
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(ip[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	return ip.Equal(a.IP)
}

// socketOwner is a process holding the socket inode (0: none readable).
func socketOwner(inode string) int {
	want := "socket:[" + inode + "]"
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		dir := "/proc/" + p.Name() + "/fd"
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if t, err := os.Readlink(dir + "/" + fd.Name()); err == nil && t == want {
				return pid
			}
		}
	}
	return 0
}
