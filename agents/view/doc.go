// Package view is the view model of a Tavern store: one model that the
// terminal UI (`tavern ui`, package view/tui), the browser
// (`tavern serve`, package view/web), the static export and `--json`
// all render, so a person and an agent see the same truth.
//
// # Basics
//
//	v, err := view.Open(store, view.Options{Person: "pat", Watch: true})
//	defer v.Close()
//	snap, _ := v.Snapshot()     // agents, queues, needs you, journal...
//	ups, stop := v.Updates()    // a version on every change, coalesced
//	msg, err := v.Do(ctx, view.Action{Name: view.ActAnswer, Target: id, Text: "yes"})
//
// A Snapshot holds agents (state, liveness, claims, last activity), queues
// (depth per state, oldest pending, owners, throughput, board columns),
// questions, commitments with their verification, channels (direct
// channels @agent are the inboxes), reservations, token slots, pools and
// their metrics, invalid documents, the journal's tail, and the Needs-you
// lens. It is built from the projection (watcher.Projection, which follows
// the files) and the journal (watcher/journal: the timeline, who acted,
// items completed for throughput). Nothing else is read, but for three
// things the projection does not hold: the flocks that say whether a
// claim holder or agent is alive, held token slots (tuples/token/.taken/),
// and the markdown bodies of the documents a Need quotes (questions),
// read once per revision.
//
// # Needs you
//
// Needs are what only a person can unblock: questions bubbled up to the
// user, human gates waiting for approval (queues.Broker.PendingGates),
// failing or timed-out commitments, agents in failed, claims whose
// holder died and were not reaped yet (a free liveness lock; an agent
// whose wrapper died on this host), hung claims (lease over, holder
// alive), dead letters, pending items blocked forever by a dead or missing
// dependency (directly or through other pending items), and invalid documents (path:line:col). Each says what it is,
// why it is there and what to do, and offers Actions. Options.Needs and
// Options.Actions are the hook for kinds this package does not know yet.
//
// # Actions
//
// Do acts as Options.Person through the library's rules only: answer
// (agents.Manager.Answer, which wakes the asker), approve and reject
// (queues.Broker.Approve/Reject: an approval record, refused when the
// view runs inside an agent), retry (queues
// Broker.Retry), release (Broker.Release, fenced by the claim's attempt),
// reap (Broker.Reap, Manager.ReapAgents), respawn (the agent state
// machine, failed -> idle), send (agents/messages), edit (docstore
// SaveEdit: the `tavern edit` check, written only over the revision the
// person edited). Every action, done or refused, is journaled as
// "view.action" with the person as agent; the documents it changes are
// journaled with the person too (Open registers the journal observer on
// the Store, so pass one that has none).
//
// # Live updates and scale
//
// With Options.Watch the view subscribes to the projection's events and
// follows the journal; each change bumps Version and wakes Updates
// receivers (coalesced: a slow face gets the latest version, not a
// backlog). A store may hold 100k items, nearly all done: the view keeps
// an index of item ids per queue and state (fed by the events) and reads
// the fields of only the items a board column lists, so a snapshot costs
// the number of queues, agents and open work, not the history. Snapshots
// are cached per version. What changes without a file event (a lease
// running out, a holder dying) is looked at every Options.Recheck.
//
// # Caveats
//
//   - Liveness is judged like the reapers do, by trying the flock for a
//     moment; a lock file that does not exist is not created to look.
//     Agents on other hosts are never called dead.
//   - An item's history (Doc with history) reads the journal from the
//     item's creation (its id carries the time): on a busy day, that is
//     the day's journal.
//   - Commitments timed out are recognised by the verifier's marker in
//     their output ("[timed out after ...]").
//   - Token slots come from queues/tuples Space.Slots, which lists without
//     reaping: a dead holder's slot shows held until someone reaps.
package view
