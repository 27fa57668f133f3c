package main

import (
	"context"
	"encoding/json"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/watcher"
	"github.com/tavernhq/tavern/watcher/daemon"
)

// queryHandlers are the ops the query daemon answers: the reads of the
// one-shot commands, run on the daemon's projection by the same code as
// their one-shot path (lsRun), so an answer from the daemon is the answer
// the files give.
func queryHandlers(s *docstore.Store) map[string]daemon.Handler {
	return map[string]daemon.Handler{
		"ls": func(_ context.Context, p *watcher.Projection, raw json.RawMessage) (any, []byte, error) {
			var a lsArgs
			if err := json.Unmarshal(raw, &a); err != nil {
				return nil, nil, err
			}
			res, err := lsRun(p, a, true)
			if err != nil {
				return nil, nil, err
			}
			return res.Problems, watcher.AppendEntries(nil, res.Entries), nil
		},
	}
}
