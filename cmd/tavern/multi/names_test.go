package multi

import (
	"strings"
	"testing"
	"time"
)

// A queue or channel whose name is all digits (a year, a ticket number)
// is a directory of that name (queues/42/, messages/2024/). Every
// all-digit path element was skipped as vim's write probe ("4913"), so
// the queue with its items and the channel's messages never left the
// machine that made them: no error, no conflict, just missing on the
// other clones.
func TestMultiDigitNames(t *testing.T) {
	t.Parallel()
	c := newCluster(t, "local", 2, 0, time.Minute)
	a, b := c.machines[0], c.machines[1]
	c.ok(a, "queue", "create", "42")
	id := strings.TrimSpace(c.ok(a, "queue", "add", "42", "--title", "the answer"))
	c.ok(a, "channel", "create", "2024")
	c.ok(a, "agent", "new", "ann")
	c.ok(a, "send", "2024", "happy new year")
	c.ok(a, "sync")
	c.ok(b, "sync")
	if out := c.ok(b, "item", "show", id); !strings.Contains(out, "title: the answer") {
		t.Fatalf("the item of queue 42 on the other machine:\n%s", out)
	}
	if out := c.ok(b, "recv", "2024", "--as", "ann"); !strings.Contains(out, "happy new year") {
		t.Fatalf("the message of channel 2024 on the other machine:\n%s", out)
	}
	// The way back: an item taken and finished on the second machine.
	out := strings.Fields(c.ok(b, "queue", "take", "42"))
	if len(out) < 2 || out[0] != id {
		t.Fatalf("take on the other machine: %q", out)
	}
	c.ok(b, "item", "done", id, "--attempt", out[1])
	c.ok(b, "sync")
	c.ok(a, "sync")
	if out := c.ok(a, "item", "show", id, "--json"); !strings.Contains(strings.ReplaceAll(out, " ", ""), `"state":"done"`) {
		t.Fatalf("the item finished on the other machine, back on the first:\n%s", out)
	}
}
