package multi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Items finished on another machine are done (or dead) there before the
// sync brings their files: `queue ls` here counts them so (done_elsewhere,
// dead_elsewhere per machine), as it counts items held there as claimed.
// They were counted pending (and ready) until the next sync.
func TestMultiQueueLsFinishedElsewhere(t *testing.T) {
	t.Parallel()
	c := newCluster(t, "etcd", 2, 1, time.Minute)
	a, b := c.machines[0], c.machines[1]
	c.ok(a, "queue", "add", "work", "--title", "last try", "--max-attempts", "1")
	c.ok(a, "sync")
	c.ok(b, "sync")
	for _, verb := range []string{"done", "fail"} {
		f := strings.Fields(c.ok(b, "queue", "take", "work"))
		if len(f) < 2 {
			t.Fatalf("take on %s: %q", b.name, f)
		}
		c.ok(b, "item", verb, f[0], "--attempt", f[1])
	}
	var got []struct {
		Pending       int            `json:"pending"`
		Ready         int            `json:"ready"`
		Done          int            `json:"done"`
		Dead          int            `json:"dead"`
		DoneElsewhere map[string]int `json:"done_elsewhere"`
		DeadElsewhere map[string]int `json:"dead_elsewhere"`
	}
	out := c.ok(a, "queue", "ls", "work", "--json")
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 1 {
		t.Fatalf("queue ls --json on %s: %v: %s", a.name, err, out)
	}
	mb, err := os.ReadFile(filepath.Join(b.store(), ".machine"))
	if err != nil {
		t.Fatal(err)
	}
	bName := strings.TrimSpace(string(mb))
	g := got[0]
	if g.Pending != 0 || g.Ready != 0 || g.Done != 1 || g.Dead != 1 || g.DoneElsewhere[bName] != 1 || g.DeadElsewhere[bName] != 1 {
		t.Fatalf("queue ls on %s before the sync: %+v, want pending 0, done 1 and dead 1 on %s", a.name, g, bName)
	}
}
