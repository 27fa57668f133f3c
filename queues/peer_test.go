package queues_test

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/tavernhq/tavern/queues"
)

// TestPeerCaller: the process at the other end of a loopback connection
// is found (here: this one); once it hung up, it cannot be told, and
// counts as no person.
func TestPeerCaller(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	c := queues.PeerCaller(server.LocalAddr(), server.RemoteAddr())
	if c == nil || c.PID != os.Getpid() || c.Unknown != "" {
		t.Fatalf("peer of a connection from this process: %+v", c)
	}
	client.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c = queues.PeerCaller(server.LocalAddr(), server.RemoteAddr())
		if c != nil && c.Agent() != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a sender that hung up still counts as a person: %+v", c)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
