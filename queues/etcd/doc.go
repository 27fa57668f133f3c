// Package etcd is Tavern's etcd coordination engine: with
// `coordination: etcd` in tavern.md, every claim of an item, token slot or
// reservation made by any machine is arbitrated by one etcd cluster, while
// the item files still move through pending/, claimed/ and done/ on every
// machine (and travel between machines with the git sync, queues/gitsync).
//
// Importing the package registers the engine with queues.RegisterEngine;
// the tavern command does. It uses the official client,
// go.etcd.io/etcd/client/v3, and only the KV, lease and transaction API
// that etcd 3.4 (Debian's etcd-server) and later share.
//
// # Configuration (tavern.md)
//
//	coordination: etcd
//	etcd:
//	  endpoints: [10.0.0.5:2379, 10.0.0.6:2379]   # $TAVERN_ETCD_ENDPOINTS overrides, per machine
//	  prefix: /tavern/myproject/                  # default /tavern/<name>/
//	  lease_ttl: 10s       # how long a dead machine's live claims stay held
//	  dial_timeout: 5s
//	  op_timeout: 5s       # one request; a Take fails after it when etcd is away
//	  username: tavern
//	  password_env: TAVERN_ETCD_PASSWORD          # never a password in tavern.md: it is synced
//	  tls: {ca: /etc/tavern/ca.pem, cert: /etc/tavern/me.pem, key: /etc/tavern/me.key, server_name: etcd}
//
// A bad setting, or one it does not know (a misspelt lease_tll would
// leave the default in force), is a *ConfigError with tavern.md's
// path:line:col.
//
// # Keys
//
// Under the prefix, for a key K (items/<queue>/<id>, tokens/<name>/<slot>,
// reservations/<agent>/<hash>, locks/reservations):
//
//   - claim/K: the current claim (holder, machine, lease), bound to an etcd
//     lease. Claim is one transaction: create claim/K only if claim/K and
//     done/K do not exist (and count the attempt), else read who holds it.
//     Exactly one of any number of racing claims succeeds.
//   - The fencing token is claim/K's create revision, recorded as the
//     item's claim_attempt. Complete, Fail, Release and Renew compare it
//     in their transaction: a claim that ran out and was taken by another
//     machine is refused (queues.ErrStale, exit 4), whatever its holder's
//     clock says.
//   - done/K: the outcome (done or dead), the fence that finished it, the
//     machine and up to 4 KiB of the result. Written in the same
//     transaction that deletes claim/K; a finished key is never claimed
//     again (until a retry of a dead item reopens it). Done records are
//     kept: a clone that has not synced yet must still learn the item is
//     done. They cost about 200 bytes per item.
//   - meta/K and back/K: counters of claims and of given-back attempts
//     (their key versions, put in the claim's and the release's own
//     transactions), so attempts = claims - given back holds across
//     machines (max_attempts), and a claim is one round trip. A retry of
//     a dead item deletes both.
//
// # Leases
//
// Claims of long-running processes (pool drones, library users with
// HoldLock or an agent's lock) ride one lease per process (lease_ttl),
// kept alive by the client: a machine that dies or loses etcd loses its
// claims lease_ttl later, and they can be taken again. One-shot claims
// (`tavern queue take`) get a lease of the queue's lease, renewed by
// `tavern item renew` (one keep-alive), which, as on one machine, the
// holder must call while it works longer than that. A renewal for
// another TTL than the lease's (a reservation made again with a longer
// --ttl; the claim records its TTL) moves the claim key to a new lease of
// that TTL in a transaction that requires the fence, and revokes the old
// one. ListLeases reports each claim's lease end (TimeToLive).
//
// Read-only listings (queues.ForListing: queue ls, reservations, token
// ls) wait at most a second (or dial_timeout) for a connection, and none
// when every endpoint refused it; the engine then remembers for 5s that
// it is down (later listings of the process give up at once). Claims,
// renewals and completions wait op_timeout as always.
//
// # Caveats
//
//   - Version skew: the client is v3.7; tests run Debian's 3.4 server. Only
//     the v3 KV/lease/txn API is used, which both speak.
//   - A claim held when its process's connection drops stays valid in
//     etcd until the lease runs out; the holder does not know it lost the
//     claim until its next call is refused. Work done meanwhile is wasted,
//     never double-committed.
//   - Engine calls happen under the item's local lock; an unreachable etcd
//     makes Take, Complete and the reaper fail after op_timeout (no claim
//     without arbitration).
package etcd
