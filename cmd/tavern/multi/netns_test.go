package multi

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// netLab gives each machine of a cluster a network namespace of its own,
// joined to this host by a veth pair: the machine's processes see only
// their own loopback and the host end of their link, where the cluster's
// etcd and git daemon also listen. Machines reach the servers at
// different addresses (per-machine $TAVERN_ETCD_ENDPOINTS and
// $TAVERN_SYNC_REMOTE, as a team's machines would) and never each other.
//
// It needs root and iproute2 (`ip`); where the machine does not allow it
// (no privileges, no veth), newNetLab says why and returns nil and the
// machines share the host's loopback. TAVERN_MULTI_NETNS=0 turns it off.
type netLab struct {
	hosts []string // host end of machine i's link: where it reaches the servers
	ns    []string // machine i's namespace
}

var netLabMu sync.Mutex // namespaces and subnets are picked one lab at a time

func newNetLab(t *testing.T, n int) *netLab {
	t.Helper()
	if os.Getenv("TAVERN_MULTI_NETNS") == "0" {
		t.Log("network namespaces off (TAVERN_MULTI_NETNS=0): machines share the loopback")
		return nil
	}
	if os.Geteuid() != 0 {
		t.Log("not root: no network namespaces, machines share the loopback")
		return nil
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Log("no ip command (iproute2): no network namespaces, machines share the loopback")
		return nil
	}
	netLabMu.Lock()
	defer netLabMu.Unlock()
	var sfx [3]byte
	rand.Read(sfx[:])
	tag := hex.EncodeToString(sfx[:])
	// A /24 of 10.0.0.0/8 that no interface of this host uses yet.
	used, _ := exec.Command("ip", "-4", "-o", "addr").Output()
	var subnet string
	for try := 0; try < 50; try++ {
		var b [2]byte
		rand.Read(b[:])
		s := fmt.Sprintf("10.%d.%d.", 100+int(b[0])%150, b[1])
		if !strings.Contains(string(used), " "+s) {
			subnet = s
			break
		}
	}
	lab := &netLab{}
	ip := func(args ...string) error {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	for i := 0; i < n; i++ {
		ns := fmt.Sprintf("tavern-%s-%d", tag, i)
		hv, nv := fmt.Sprintf("tv%sh%d", tag, i), fmt.Sprintf("tv%sn%d", tag, i)
		host, inner := fmt.Sprintf("%s%d", subnet, 4*i+1), fmt.Sprintf("%s%d", subnet, 4*i+2)
		if err := ip("netns", "add", ns); err != nil {
			t.Logf("no network namespaces here (%v): machines share the loopback", err)
			lab.close()
			return nil
		}
		lab.ns = append(lab.ns, ns)
		steps := [][]string{
			{"link", "add", hv, "type", "veth", "peer", "name", nv},
			{"link", "set", nv, "netns", ns},
			{"addr", "add", host + "/30", "dev", hv},
			{"link", "set", hv, "up"},
			{"-n", ns, "addr", "add", inner + "/30", "dev", nv},
			{"-n", ns, "link", "set", nv, "up"},
			{"-n", ns, "link", "set", "lo", "up"},
		}
		for _, st := range steps {
			if err := ip(st...); err != nil {
				t.Logf("no network namespaces here (%v): machines share the loopback", err)
				lab.close()
				return nil
			}
		}
		lab.hosts = append(lab.hosts, host)
	}
	t.Cleanup(lab.close)
	t.Logf("machines in network namespaces %v, reaching the servers at %v", lab.ns, lab.hosts)
	return lab
}

// close removes the namespaces (and with them their ends of the links,
// which takes the host ends too).
func (l *netLab) close() {
	for _, ns := range l.ns {
		exec.Command("ip", "netns", "del", ns).Run()
	}
	l.ns = nil
}

// wrap returns the command line that runs name with args inside machine
// i's namespace. `ip netns exec` execs the command in place: the process
// (and its group, for a SIGKILL of the whole machine) is the command's.
func (l *netLab) wrap(i int, name string, args ...string) (string, []string) {
	if l == nil {
		return name, args
	}
	return "ip", append([]string{"netns", "exec", l.ns[i], name}, args...)
}
