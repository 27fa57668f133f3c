//go:build !tavern_no_sqlite_baseline

// make test sets tavern_no_sqlite_baseline: modernc.org/sqlite (with
// modernc.org/libc, some 13 MB of generated Go) is this benchmark's alone,
// and compiling it under -race took ~50 s of CPU in a cold make test, where
// no benchmark runs. make bench and a plain go test still build it.

package queues_test

// BenchmarkSQLiteQueue is the queue a user would pick instead of Tavern:
// SQLite in WAL mode (modernc.org/sqlite, pure Go), one table of items,
// claim with UPDATE … RETURNING, complete with a second UPDATE, each an
// autocommit transaction. `make bench` prints the Tavern take+done figures
// as ratios of this one (see cmd/benchreport/pairs.go), so the sub-benchmark
// names (full|normal / workers=1|8) and the "ops/s" metric are a contract.
//
// Enqueueing is setup (one transaction, not timed): only the take+done
// cycle is measured, matching BenchmarkQueueTakeDone. The exactly-once
// property is checked after every run: every item claimed by exactly one
// worker and completed once, nothing left pending or claimed.

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/tavernhq/tavern/docstore/storetest"
)

func BenchmarkSQLiteQueue(b *testing.B) {
	for _, level := range []string{"full", "normal"} {
		for _, workers := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/workers=%d", level, workers), func(b *testing.B) {
				benchSQLiteQueue(b, strings.ToUpper(level), workers)
			})
		}
	}
}

func benchSQLiteQueue(b *testing.B, synchronous string, workers int) {
	ctx := context.Background()
	path := filepath.Join(storetest.BenchDir(b), "queue.db")
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(30000)" +
		"&_pragma=synchronous(" + synchronous + ")"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(workers + 1)
	db.SetMaxIdleConns(workers + 1)

	if _, err := db.ExecContext(ctx, `CREATE TABLE items (
		id INTEGER PRIMARY KEY,
		state TEXT NOT NULL DEFAULT 'pending',
		worker INTEGER,
		payload TEXT NOT NULL,
		result TEXT)`); err != nil {
		b.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE INDEX items_state ON items(state, id)`); err != nil {
		b.Fatal(err)
	}
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		b.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}

	n := b.N
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO items (payload) VALUES (?)`)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := ins.ExecContext(ctx, payload); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	syscall.Sync()

	// Open one connection per worker before the timer starts, each checked
	// for the synchronous level the DSN asked for.
	want := map[string]int{"FULL": 2, "NORMAL": 1}[synchronous]
	conns := make([]*sql.Conn, workers)
	for w := range conns {
		c, err := db.Conn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		var got int
		if err := c.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&got); err != nil || got != want {
			b.Fatalf("synchronous = %d, %v; want %d", got, err, want)
		}
		conns[w] = c
	}

	claims := make([][]int64, workers)
	errc := make(chan error, workers)
	var wg sync.WaitGroup
	cpu0 := storetest.CPUNow(b)
	b.ResetTimer()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := conns[w]
			for {
				var id int64
				var p string
				err := c.QueryRowContext(ctx, `UPDATE items SET state = 'claimed', worker = ?
					WHERE id = (SELECT id FROM items WHERE state = 'pending' ORDER BY id LIMIT 1)
					RETURNING id, payload`, w).Scan(&id, &p)
				if err == sql.ErrNoRows {
					return
				}
				if err != nil {
					errc <- fmt.Errorf("claim: %w", err)
					return
				}
				if len(p) != len(payload) {
					errc <- fmt.Errorf("item %d: payload of %d bytes, want %d", id, len(p), len(payload))
					return
				}
				res, err := c.ExecContext(ctx, `UPDATE items SET state = 'done', result = 'ok'
					WHERE id = ? AND state = 'claimed' AND worker = ?`, id, w)
				if err != nil {
					errc <- fmt.Errorf("complete %d: %w", id, err)
					return
				}
				if k, err := res.RowsAffected(); err != nil || k != 1 {
					errc <- fmt.Errorf("complete %d: %d rows, %v; lost the claim", id, k, err)
					return
				}
				claims[w] = append(claims[w], id)
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	storetest.ReportCPU(b, cpu0, b.N)
	close(errc)
	for err := range errc {
		b.Fatal(err)
	}

	// Exactly once: every id 1..n claimed by one worker, once.
	seen := make([]int, n+1)
	for _, ids := range claims {
		for _, id := range ids {
			if id < 1 || id > int64(n) {
				b.Fatalf("claimed unknown id %d", id)
			}
			seen[id]++
		}
	}
	for id := 1; id <= n; id++ {
		if seen[id] != 1 {
			b.Fatalf("item %d claimed %d times, want exactly once", id, seen[id])
		}
	}
	var notDone int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM items WHERE state != 'done'`).Scan(&notDone); err != nil {
		b.Fatal(err)
	}
	if notDone != 0 {
		b.Fatalf("%d items not done, want 0", notDone)
	}
	storetest.ReportOpsPerSec(b, n)
}
