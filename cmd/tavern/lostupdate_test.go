package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
)

// Lost-update test through the CLI: 8 concurrent clients, each a loop of
// real tavern processes (show --json, then set --if-rev, retried on exit
// 4), increment one field; the total is exact. The default size keeps
// `go test` well inside its time budget (each increment costs two process
// starts, and conflicts multiply them); `-tags long` runs the full
// 8 × 200 (cliIncrements in lostupdate_{short,long}_test.go).
func TestLostUpdateCLI(t *testing.T) {
	const clients = 8
	p := newProject(t)
	p.ok("new", "agent", "counter", "spawns=0")
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	var mu sync.Mutex
	conflicts := 0
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < cliIncrements; {
				r := runIn(t, p.dir, "", nil, "show", "agents/counter", "--json")
				if r.code != 0 {
					errs <- fmt.Errorf("show: %s", r)
					return
				}
				var obj struct {
					Rev    string
					Fields map[string]any
				}
				if err := json.Unmarshal([]byte(r.out), &obj); err != nil {
					errs <- err
					return
				}
				n, ok := obj.Fields["spawns"].(float64)
				if !ok {
					errs <- fmt.Errorf("spawns is %#v", obj.Fields["spawns"])
					return
				}
				r = runIn(t, p.dir, "", nil, "set", "agents/counter", "spawns="+strconv.Itoa(int(n)+1), "--if-rev", obj.Rev)
				switch r.code {
				case 0:
					i++
				case 4:
					mu.Lock()
					conflicts++
					mu.Unlock()
				default:
					errs <- fmt.Errorf("set: %s", r)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := p.fields("agents/counter")["spawns"]
	if got != float64(clients*cliIncrements) {
		t.Fatalf("spawns = %v after %d×%d increments, want %d", got, clients, cliIncrements, clients*cliIncrements)
	}
	t.Logf("%d increments, %d conflicts retried", clients*cliIncrements, conflicts)
}
