package daemon

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tavernhq/tavern/schema"
)

// The protocol: the client sends one request as a JSON line; the server
// answers with one Header as a JSON line followed by Header.N bytes of
// payload, and closes the connection.

// Version is the protocol version; a server answers only requests of its
// own version.
const Version = 1

// SocketName is the socket's name in the store root. Its dot makes it
// engine-private: never a document, ignored by watchers.
const SocketName = ".daemon.sock"

// LockFile is the election lock, relative to the store root: whoever
// holds its flock serves.
const LockFile = ".locks/daemon.lock"

// Request is what a client asks.
type Request struct {
	V    int             `json:"v"`
	Op   string          `json:"op"`
	Dev  uint64          `json:"dev"` // the store root as the client sees it
	Ino  uint64          `json:"ino"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Header starts every answer.
type Header struct {
	V     int             `json:"v"`
	Error string          `json:"error,omitempty"`
	Gen   uint64          `json:"gen,omitempty"` // the sync the answer is current to
	Info  json.RawMessage `json:"info,omitempty"`
	N     int             `json:"n"` // payload bytes that follow the header line
}

// Status is the answer to the "status" op (no sync needed).
type Status struct {
	PID      int              `json:"pid"`
	Who      string           `json:"who"`  // the serving process ("tavern watch")
	Root     string           `json:"root"` // the store root it serves
	Started  schema.Timestamp `json:"started"`
	Docs     int              `json:"documents"`
	Mode     string           `json:"mode"`
	Gen      uint64           `json:"gen"`    // syncs so far
	Served   uint64           `json:"served"` // queries answered
	Explicit bool             `json:"explicit"`
}

// identity is a store root's device and inode.
func identity(root string) (dev, ino uint64, err error) {
	var st unix.Stat_t
	if err := unix.Stat(root, &st); err != nil {
		return 0, 0, err
	}
	return uint64(st.Dev), uint64(st.Ino), nil
}

// maxPath is the longest socket path used as is (sun_path holds 108
// bytes with its terminating NUL).
const maxPath = 100

// sockAddr returns an address for name in dir that fits a sockaddr_un:
// the path itself, or /proc/self/fd/N/name through an O_PATH descriptor
// of dir (closed by the returned function once the address is used).
func sockAddr(dir, name string) (string, func(), error) {
	p := filepath.Join(dir, name)
	if len(p) <= maxPath {
		return p, func() {}, nil
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, err
	}
	p = "/proc/self/fd/" + strconv.Itoa(fd) + "/" + name
	if len(p) > maxPath {
		unix.Close(fd)
		return "", nil, fmt.Errorf("socket name %q too long", name)
	}
	return p, func() { unix.Close(fd) }, nil
}

// dial connects to the socket in root.
func dial(root string, deadline time.Time) (net.Conn, error) {
	addr, done, err := sockAddr(root, SocketName)
	if err != nil {
		return nil, err
	}
	defer done()
	d := net.Dialer{Deadline: deadline}
	return d.Dial("unix", addr)
}

// tempSockName is where a server binds before renaming into place.
func tempSockName() string { return SocketName + "." + strconv.Itoa(os.Getpid()) }
