package etcd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/connectivity"

	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

func init() {
	queues.RegisterEngine("etcd", Open)
	// ParseConfig dials nothing: tavern check runs it.
	queues.RegisterEngineCheck("etcd", func(cc queues.CoordConfig) error { _, err := ParseConfig(cc); return err })
}

// Config is the etcd: section of tavern.md.
type Config struct {
	Endpoints   []string      // host:port or URLs; $TAVERN_ETCD_ENDPOINTS (comma-separated) overrides
	Prefix      string        // key prefix, default /tavern/<store name>/
	LeaseTTL    time.Duration // lease of Live claims (a dead machine's claims return after it), default 10s
	DialTimeout time.Duration // default 5s
	OpTimeout   time.Duration // one request, default 5s
	Username    string
	Password    string // from the variable named by password_env, never from tavern.md
	TLS         *tls.Config
}

// ParseConfig reads the etcd: section of tavern.md (see package doc).
func ParseConfig(cc queues.CoordConfig) (Config, error) {
	sec := cc.Section("etcd")
	cfg := Config{LeaseTTL: 10 * time.Second, DialTimeout: 5 * time.Second, OpTimeout: 5 * time.Second}
	bad := func(field, msg string) error {
		path, line, col := cc.Pos(append([]string{"etcd"}, strings.Split(field, ".")...)...)
		return &ConfigError{Path: path, Line: line, Col: col, Field: "etcd." + field, Msg: msg}
	}
	// A misspelt setting (lease_tll) would leave its default in force
	// without a word: refused at its line, as sync: refuses one.
	if err := knownKeys(sec, etcdKeys, "", bad); err != nil {
		return cfg, err
	}
	if t, ok := sec["tls"].(map[string]any); ok {
		if err := knownKeys(t, tlsKeys, "tls.", bad); err != nil {
			return cfg, err
		}
	}
	switch v := sec["endpoints"].(type) {
	case nil:
	case string:
		cfg.Endpoints = splitList(v)
	case []any:
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return cfg, bad("endpoints", "want a list of host:port strings")
			}
			cfg.Endpoints = append(cfg.Endpoints, s)
		}
	default:
		return cfg, bad("endpoints", "want a list of host:port strings")
	}
	if env := os.Getenv("TAVERN_ETCD_ENDPOINTS"); env != "" {
		cfg.Endpoints = splitList(env)
		// tavern.md's endpoints are checked when it is read; the
		// variable's only here (a typo would wait for a connection).
		for _, e := range cfg.Endpoints {
			if msg := schema.CheckEndpoint(e); msg != "" {
				return cfg, bad("endpoints", "$TAVERN_ETCD_ENDPOINTS: "+msg)
			}
		}
	}
	if len(cfg.Endpoints) == 0 {
		return cfg, bad("endpoints", "missing (tavern.md etcd: endpoints: [host:port], or $TAVERN_ETCD_ENDPOINTS)")
	}
	str := func(k string) (string, error) {
		switch v := sec[k].(type) {
		case nil:
			return "", nil
		case string:
			return v, nil
		default:
			return "", bad(k, "want a string")
		}
	}
	dur := func(k string, into *time.Duration) error {
		switch v := sec[k].(type) {
		case nil:
			return nil
		case int:
			if v <= 0 {
				return bad(k, "want a positive duration")
			}
			*into = time.Duration(v) * time.Second
			return nil
		case string:
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return bad(k, fmt.Sprintf("%q is not a positive duration", v))
			}
			*into = d
			return nil
		}
		return bad(k, "want a duration like 10s")
	}
	var err error
	if cfg.Prefix, err = str("prefix"); err != nil {
		return cfg, err
	}
	if cfg.Prefix == "" {
		name, _ := cc.Fields["name"].(string)
		if name == "" {
			name = "default"
		}
		cfg.Prefix = "/tavern/" + name + "/"
	}
	if !strings.HasSuffix(cfg.Prefix, "/") {
		cfg.Prefix += "/"
	}
	for k, p := range map[string]*time.Duration{"lease_ttl": &cfg.LeaseTTL, "dial_timeout": &cfg.DialTimeout, "op_timeout": &cfg.OpTimeout} {
		if err := dur(k, p); err != nil {
			return cfg, err
		}
	}
	if cfg.Username, err = str("username"); err != nil {
		return cfg, err
	}
	if _, ok := sec["password"]; ok {
		return cfg, bad("password", "tavern.md is synced to every machine: name an environment variable with password_env instead")
	}
	pwEnv, err := str("password_env")
	if err != nil {
		return cfg, err
	}
	if pwEnv != "" {
		cfg.Password = os.Getenv(pwEnv)
		if cfg.Password == "" {
			return cfg, bad("password_env", "$"+pwEnv+" is empty")
		}
	}
	if t, ok := sec["tls"]; ok {
		m, ok := t.(map[string]any)
		if !ok {
			return cfg, bad("tls", "want a map with ca, cert, key, server_name")
		}
		if cfg.TLS, err = tlsConfig(m, bad); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// The settings of etcd: and of its tls:.
var (
	etcdKeys = []string{"endpoints", "prefix", "lease_ttl", "dial_timeout", "op_timeout", "username", "password", "password_env", "tls"}
	tlsKeys  = []string{"ca", "cert", "key", "server_name"}
)

// knownKeys refuses the first key of sec (in name order) that is not in
// known, naming the known ones near it.
func knownKeys(sec map[string]any, known []string, prefix string, bad func(field, msg string) error) error {
	keys := make([]string, 0, len(sec))
	for k := range sec {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if slices.Contains(known, k) {
			continue
		}
		msg := "unknown setting"
		if near := schema.Near(k, known); len(near) > 0 {
			msg += " (did you mean " + schema.NearList(near) + "?)"
		}
		return bad(prefix+k, msg+"; known: "+strings.Join(known, ", "))
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

func tlsConfig(m map[string]any, bad func(field, msg string) error) (*tls.Config, error) {
	get := func(k string) string { s, _ := m[k].(string); return s }
	c := &tls.Config{ServerName: get("server_name"), MinVersion: tls.VersionTLS12}
	if ca := get("ca"); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, bad("tls.ca", err.Error())
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, bad("tls.ca", ca+": no PEM certificate")
		}
		c.RootCAs = pool
	}
	cert, key := get("cert"), get("key")
	if (cert == "") != (key == "") {
		return nil, bad("tls", "cert and key go together")
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, bad("tls.cert", err.Error())
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// Open is the queues.EngineOpener of coordination: etcd.
func Open(cc queues.CoordConfig) (queues.Coordinator, error) {
	cfg, err := ParseConfig(cc)
	if err != nil {
		return nil, err
	}
	return New(cfg, cc.Machine)
}

// Engine is the etcd Coordinator. It is safe for concurrent use.
type Engine struct {
	cfg     Config
	machine string
	cli     *clientv3.Client

	mu       sync.Mutex
	session  clientv3.LeaseID // lease of Live claims, kept alive until Close or loss
	sessDone chan struct{}    // closed when the session's keep-alive stops
	cancel   context.CancelFunc
	finished map[string]time.Time // keys seen finished (Claim answers without a round trip)
	seenHeld map[string]time.Time // keys seen held by another claim (Skip, briefly)
	down     error                // why a listing could not connect (listings give up at once until downUntil)
	downTill time.Time
}

// downMemory is how long a failed listing connect makes later listings
// of this process give up at once (a long-lived process lists again
// after it, and as soon as the connection is up).
const downMemory = 5 * time.Second

// listingConnect bounds how long a read-only listing (queues.ForListing)
// waits for a connection to etcd (or dial_timeout, if shorter): a
// connection to a reachable etcd is up in milliseconds, and a listing
// that cannot have one shows local state with a warning rather than
// waiting dial_timeout. Claims and renewals wait their full timeouts.
const listingConnect = time.Second

// connected returns nil when ctx is not a listing's, or once the
// connection to etcd is up; for a listing it fails at once when every
// endpoint refused it, or a listing of this process could not connect
// within downMemory, and after listingConnect when none answered.
func (e *Engine) connected(ctx context.Context, op, key string) error {
	if !queues.IsListing(ctx) {
		return nil
	}
	conn := e.cli.ActiveConnection()
	if conn.GetState() == connectivity.Ready {
		return nil
	}
	e.mu.Lock()
	down := e.down
	if time.Now().After(e.downTill) {
		down = nil
	}
	e.mu.Unlock()
	if down != nil {
		return e.fail(op, key, down)
	}
	wait := min(e.cfg.DialTimeout, listingConnect)
	if wait <= 0 {
		wait = listingConnect
	}
	cctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	conn.Connect()
	for {
		st := conn.GetState()
		var err error
		switch st {
		case connectivity.Ready:
			return nil
		case connectivity.TransientFailure, connectivity.Shutdown:
			err = fmt.Errorf("cannot connect (%s)", strings.ToLower(st.String()))
		default:
			if conn.WaitForStateChange(cctx, st) {
				continue
			}
			err = fmt.Errorf("not connected within %v", wait)
		}
		e.mu.Lock()
		e.down, e.downTill = err, time.Now().Add(downMemory)
		e.mu.Unlock()
		return e.fail(op, key, err)
	}
}

// heldMemory is how long Skip remembers a key held elsewhere; finished
// keys are remembered 30s (only a retry of a dead item reopens one).
const heldMemory = time.Second

// Skip implements queues.Skipper.
func (e *Engine) Skip(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t, ok := e.finished[key]; ok && time.Since(t) < 30*time.Second {
		return true
	}
	if t, ok := e.seenHeld[key]; ok {
		if time.Since(t) < heldMemory {
			return true
		}
		delete(e.seenHeld, key)
	}
	return false
}

// New connects to etcd (the connection is made lazily: an unreachable
// cluster makes the first call fail after OpTimeout, not New).
func New(cfg Config, machine string) (*Engine, error) {
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = 5 * time.Second
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 10 * time.Second
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: cfg.Endpoints, DialTimeout: cfg.DialTimeout, TLS: cfg.TLS,
		Username: cfg.Username, Password: cfg.Password,
		DialKeepAliveTime: 2 * time.Second, DialKeepAliveTimeout: 2 * time.Second,
		Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, &queues.CoordError{Op: "connect", Key: strings.Join(cfg.Endpoints, ","), Err: fmt.Errorf("%w: %v", queues.ErrUnavailable, err)}
	}
	return &Engine{cfg: cfg, machine: machine, cli: cli, finished: map[string]time.Time{}, seenHeld: map[string]time.Time{}}, nil
}

// Engine implements queues.Coordinator.
func (e *Engine) Engine() string { return "etcd" }

// Machine implements queues.Coordinator.
func (e *Engine) Machine() string { return e.machine }

// Client is the underlying etcd client.
func (e *Engine) Client() *clientv3.Client { return e.cli }

// Prefix is the key prefix of this store.
func (e *Engine) Prefix() string { return e.cfg.Prefix }

// Close stops the session keep-alive (Live claims then end one lease TTL
// later, as if the process had died: Close does not revoke them, a
// Broker's Close leaves claims that are still claimed to the reaper) and
// closes the connection.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.cancel != nil {
		e.cancel()
	}
	e.mu.Unlock()
	return e.cli.Close()
}

func (e *Engine) claimKey(k string) string { return e.cfg.Prefix + "claim/" + k }
func (e *Engine) doneKey(k string) string  { return e.cfg.Prefix + "done/" + k }
func (e *Engine) metaKey(k string) string  { return e.cfg.Prefix + "meta/" + k }
func (e *Engine) backKey(k string) string  { return e.cfg.Prefix + "back/" + k }

type claimVal struct {
	Holder  string `json:"holder"`
	Machine string `json:"machine"`
	Lease   string `json:"lease"`
	Live    bool   `json:"live,omitempty"`
	At      string `json:"at"`
	// TTL is the granted TTL of a per-claim lease, in seconds: a renewal
	// asking for another one moves the claim to a new lease (absent: a
	// record of an older tavern, renewed with the lease it has).
	TTL int64 `json:"ttl,omitempty"`
}

type doneVal struct {
	Outcome string `json:"outcome"`
	Fence   int64  `json:"fence"`
	Machine string `json:"machine"`
	Result  string `json:"result,omitempty"`
	At      string `json:"at"`
}

func (e *Engine) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, e.cfg.OpTimeout)
}

func (e *Engine) fail(op, key string, err error) error {
	if errors.Is(err, queues.ErrHeld) || errors.Is(err, queues.ErrFinished) || errors.Is(err, queues.ErrLostClaim) {
		return err
	}
	return &queues.CoordError{Op: op, Key: key, Err: fmt.Errorf("%w: etcd %s: %v", queues.ErrUnavailable, strings.Join(e.cfg.Endpoints, ","), err)}
}

// state reads a key's claim, done and meta records at one revision.
func (e *Engine) state(ctx context.Context, key string) (claim, done, meta, back *clientv3.GetResponse, err error) {
	r, err := e.cli.Txn(ctx).Then(clientv3.OpGet(e.claimKey(key)), clientv3.OpGet(e.doneKey(key)), clientv3.OpGet(e.metaKey(key)), clientv3.OpGet(e.backKey(key))).Commit()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	g := func(i int) *clientv3.GetResponse { return (*clientv3.GetResponse)(r.Responses[i].GetResponseRange()) }
	return g(0), g(1), g(2), g(3), nil
}

// attempts counts claims less those given back: the claims counter
// (meta/K) is put once per claim and the give-back counter (back/K) once
// per given-back attempt, so their versions (puts since creation) are the
// counts, kept in the same transactions as the claims, without a read
// before the write.
func attempts(meta, back *clientv3.GetResponse) int {
	n := int64(0)
	if len(meta.Kvs) > 0 {
		n = meta.Kvs[0].Version
	}
	if len(back.Kvs) > 0 {
		n -= back.Kvs[0].Version
	}
	if n < 0 {
		n = 0
	}
	return int(n)
}

// Claim implements queues.Coordinator: one transaction that creates the
// claim key only if neither it nor the done key exists, bound to a lease,
// and counts the attempt (a put of the claims counter) in the same step;
// when it does not succeed it reads who holds the key instead.
func (e *Engine) Claim(parent context.Context, key string, req queues.ClaimRequest) (queues.Grant, error) {
	e.mu.Lock()
	if t, ok := e.finished[key]; ok && time.Since(t) < 30*time.Second {
		e.mu.Unlock()
		return queues.Grant{}, fmt.Errorf("%s: %w", key, queues.ErrFinished)
	}
	e.mu.Unlock()
	ctx, cancel := e.ctx(parent)
	defer cancel()
	lease, err := e.lease(ctx, req)
	if err != nil {
		return queues.Grant{}, e.fail("claim", key, err)
	}
	cv0 := claimVal{Holder: req.Holder, Machine: e.machine, Lease: strconv.FormatInt(int64(lease), 16), Live: req.Live, At: time.Now().UTC().Format(time.RFC3339Nano)}
	if !req.Live {
		cv0.TTL = ttlSeconds(req.TTL)
	}
	cv, _ := json.Marshal(cv0)
	r, err := e.cli.Txn(ctx).If(
		clientv3.Compare(clientv3.CreateRevision(e.claimKey(key)), "=", 0),
		clientv3.Compare(clientv3.CreateRevision(e.doneKey(key)), "=", 0),
	).Then(
		clientv3.OpPut(e.claimKey(key), string(cv), clientv3.WithLease(lease)),
		// The counter's value names the claiming machine: a release
		// deletes the claim key, and a slot released there is still
		// "released on MACHINE" until its file syncs here.
		clientv3.OpPut(e.metaKey(key), e.machine),
		clientv3.OpGet(e.metaKey(key)),
		clientv3.OpGet(e.backKey(key)),
	).Else(
		clientv3.OpGet(e.claimKey(key)),
		clientv3.OpGet(e.doneKey(key)),
	).Commit()
	if err != nil || !r.Succeeded {
		if !req.Live {
			e.revokeLater(lease)
		}
	}
	if err != nil {
		return queues.Grant{}, e.fail("claim", key, err)
	}
	get := func(i int) *clientv3.GetResponse { return (*clientv3.GetResponse)(r.Responses[i].GetResponseRange()) }
	if !r.Succeeded {
		claim, done := get(0), get(1)
		if len(done.Kvs) > 0 {
			e.mu.Lock()
			e.finished[key] = time.Now()
			e.mu.Unlock()
			return queues.Grant{}, fmt.Errorf("%s: %w", key, queues.ErrFinished)
		}
		he := &queues.HeldError{Key: key, Holder: "?", Machine: "?"}
		if len(claim.Kvs) > 0 {
			var v claimVal
			_ = json.Unmarshal(claim.Kvs[0].Value, &v)
			he.Holder, he.Machine, he.Fence = v.Holder, v.Machine, claim.Kvs[0].CreateRevision
		}
		e.mu.Lock()
		if len(e.seenHeld) > 100000 {
			e.seenHeld = map[string]time.Time{}
		}
		e.seenHeld[key] = time.Now()
		e.mu.Unlock()
		return queues.Grant{}, he
	}
	return queues.Grant{Fence: r.Header.Revision, Attempts: attempts(get(2), get(3)), Lease: "etcd:" + strconv.FormatInt(int64(lease), 16)}, nil
}

// lease returns the lease a claim is bound to: the process's session
// lease (kept alive) for Live claims, a fresh lease of req.TTL otherwise.
func (e *Engine) lease(ctx context.Context, req queues.ClaimRequest) (clientv3.LeaseID, error) {
	if req.Live {
		return e.sessionLease(ctx)
	}
	g, err := e.cli.Grant(ctx, ttlSeconds(req.TTL))
	if err != nil {
		return 0, err
	}
	return g.ID, nil
}

// ttlSeconds is the lease TTL of a claim of ttl: whole seconds, at least 1.
func ttlSeconds(ttl time.Duration) int64 {
	s := int64((ttl + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}

func (e *Engine) sessionLease(ctx context.Context) (clientv3.LeaseID, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.session != 0 {
		select {
		case <-e.sessDone:
			e.session = 0 // lost (expired during a partition): start a new one
		default:
			return e.session, nil
		}
	}
	g, err := e.cli.Grant(ctx, int64(e.cfg.LeaseTTL/time.Second))
	if err != nil {
		return 0, err
	}
	kctx, cancel := context.WithCancel(context.Background())
	ch, err := e.cli.KeepAlive(kctx, g.ID)
	if err != nil {
		cancel()
		return 0, err
	}
	done := make(chan struct{})
	go func() {
		for range ch { // drained; closes when the lease is gone or kctx ends
		}
		close(done)
	}()
	if e.cancel != nil {
		e.cancel()
	}
	e.session, e.sessDone, e.cancel = g.ID, done, cancel
	return g.ID, nil
}

func (e *Engine) revokeLater(id clientv3.LeaseID) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.OpTimeout)
		defer cancel()
		_, _ = e.cli.Revoke(ctx, id)
	}()
}

// held reads the claim key and checks it is the one created at fence.
func (e *Engine) held(ctx context.Context, key string, fence int64) (*claimVal, error) {
	r, err := e.cli.Get(ctx, e.claimKey(key))
	if err != nil {
		return nil, e.fail("check", key, err)
	}
	if len(r.Kvs) == 0 || r.Kvs[0].CreateRevision != fence {
		return nil, e.lost(ctx, key, fence)
	}
	var v claimVal
	_ = json.Unmarshal(r.Kvs[0].Value, &v)
	return &v, nil
}

// lost explains why fence no longer holds key.
func (e *Engine) lost(ctx context.Context, key string, fence int64) error {
	claim, done, _, _, err := e.state(ctx, key)
	why := "its lease ran out"
	switch {
	case err != nil:
	case len(done.Kvs) > 0:
		var d doneVal
		_ = json.Unmarshal(done.Kvs[0].Value, &d)
		why = fmt.Sprintf("it is %s (fence %d on %s)", d.Outcome, d.Fence, d.Machine)
	case len(claim.Kvs) > 0:
		var v claimVal
		_ = json.Unmarshal(claim.Kvs[0].Value, &v)
		why = fmt.Sprintf("it is held by fence %d (%s on %s)", claim.Kvs[0].CreateRevision, v.Holder, v.Machine)
	}
	return fmt.Errorf("%s fence %d: %w: %s", key, fence, queues.ErrLostClaim, why)
}

// Renew implements queues.Coordinator: one keep-alive of the claim's own
// lease (a Live claim's session lease is kept alive continuously; its
// renewal only checks the fence and that the session is not lost). A
// renewal for another TTL than the lease was granted (a reservation made
// again with a longer --ttl) moves the claim to a new lease of ttl, as the
// git engine sets lease_until to now + ttl: a keep-alive only restarts the
// lease's own TTL, and the engine would let the claim go before the
// holder's file says it ends.
func (e *Engine) Renew(parent context.Context, key string, fence int64, ttl time.Duration) error {
	ctx, cancel := e.ctx(parent)
	defer cancel()
	v, err := e.held(ctx, key, fence)
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(v.Lease, 16, 64)
	if err != nil {
		return e.fail("renew", key, fmt.Errorf("claim record has lease %q", v.Lease))
	}
	if !v.Live && v.TTL > 0 && ttl > 0 && ttlSeconds(ttl) != v.TTL {
		return e.moveLease(ctx, key, fence, *v, clientv3.LeaseID(id), ttlSeconds(ttl))
	}
	r, err := e.cli.KeepAliveOnce(ctx, clientv3.LeaseID(id))
	if err != nil {
		if strings.Contains(err.Error(), "requested lease not found") {
			return e.lost(ctx, key, fence)
		}
		return e.fail("renew", key, err)
	}
	if r.TTL <= 0 {
		return e.lost(ctx, key, fence)
	}
	return nil
}

// moveLease moves the claim fence holds on key to a new lease of ttl
// seconds: the claim key is put again (its create revision, the fence,
// stays) bound to the new lease if fence still holds it, and the old
// lease is revoked.
func (e *Engine) moveLease(ctx context.Context, key string, fence int64, v claimVal, old clientv3.LeaseID, ttl int64) error {
	g, err := e.cli.Grant(ctx, ttl)
	if err != nil {
		return e.fail("renew", key, err)
	}
	v.Lease, v.TTL = strconv.FormatInt(int64(g.ID), 16), ttl
	cv, _ := json.Marshal(v)
	r, err := e.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(e.claimKey(key)), "=", fence)).
		Then(clientv3.OpPut(e.claimKey(key), string(cv), clientv3.WithLease(g.ID))).Commit()
	if err != nil || !r.Succeeded {
		e.revokeLater(g.ID)
		if err != nil {
			return e.fail("renew", key, err)
		}
		return e.lost(ctx, key, fence)
	}
	e.revokeLater(old)
	return nil
}

// Release implements queues.Coordinator: one transaction that deletes
// the claim key if fence still holds it (and counts a given-back attempt).
func (e *Engine) Release(parent context.Context, key string, fence int64, giveBack bool) error {
	ctx, cancel := e.ctx(parent)
	defer cancel()
	ops := []clientv3.Op{clientv3.OpDelete(e.claimKey(key), clientv3.WithPrevKV())}
	if giveBack {
		ops = append(ops, clientv3.OpPut(e.backKey(key), ""))
	}
	r, err := e.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(e.claimKey(key)), "=", fence)).Then(ops...).Commit()
	if err != nil {
		return e.fail("release", key, err)
	}
	if !r.Succeeded {
		return e.lost(ctx, key, fence)
	}
	if del := r.Responses[0].GetResponseDeleteRange(); del != nil && len(del.PrevKvs) > 0 {
		var v claimVal
		_ = json.Unmarshal(del.PrevKvs[0].Value, &v)
		e.revokeOwn(v)
	}
	return nil
}

// revokeOwn revokes a per-claim lease once its claim is gone (a session
// lease is shared and stays).
func (e *Engine) revokeOwn(v claimVal) {
	if v.Live {
		return
	}
	if id, err := strconv.ParseInt(v.Lease, 16, 64); err == nil {
		e.revokeLater(clientv3.LeaseID(id))
	}
}

// Finish implements queues.Coordinator: the claim key is deleted and the
// done key created in one transaction that requires the claim key's
// revision to be fence.
func (e *Engine) Finish(parent context.Context, key string, fence int64, outcome, result string) error {
	ctx, cancel := e.ctx(parent)
	defer cancel()
	if len(result) > 4096 {
		result = result[:4096]
	}
	dv, _ := json.Marshal(doneVal{Outcome: outcome, Fence: fence, Machine: e.machine, Result: result, At: time.Now().UTC().Format(time.RFC3339Nano)})
	r, err := e.cli.Txn(ctx).If(
		clientv3.Compare(clientv3.CreateRevision(e.claimKey(key)), "=", fence),
	).Then(
		clientv3.OpDelete(e.claimKey(key)),
		clientv3.OpPut(e.doneKey(key), string(dv)),
	).Else(clientv3.OpGet(e.claimKey(key))).Commit()
	if err != nil {
		return e.fail("finish", key, err)
	}
	if !r.Succeeded {
		return e.lost(ctx, key, fence)
	}
	// The claim value is gone; its lease (if per-claim) expires on its own.
	return nil
}

// Reopen implements queues.Coordinator.
func (e *Engine) Reopen(parent context.Context, key string) error {
	ctx, cancel := e.ctx(parent)
	defer cancel()
	// Deleting the counters resets the attempts (a key's version starts
	// again at 1 when it is created anew).
	_, err := e.cli.Txn(ctx).Then(clientv3.OpDelete(e.doneKey(key)), clientv3.OpDelete(e.metaKey(key)), clientv3.OpDelete(e.backKey(key))).Commit()
	if err != nil {
		return e.fail("reopen", key, err)
	}
	e.mu.Lock()
	delete(e.finished, key)
	e.mu.Unlock()
	return nil
}

// State implements queues.Coordinator.
func (e *Engine) State(parent context.Context, key string) (queues.ClaimState, error) {
	ctx, cancel := e.ctx(parent)
	defer cancel()
	claim, done, meta, back, err := e.state(ctx, key)
	if err != nil {
		return queues.ClaimState{}, e.fail("state", key, err)
	}
	var st queues.ClaimState
	st.Attempts = attempts(meta, back)
	if len(meta.Kvs) > 0 {
		// Not held: the fence of the last claim is the claims counter's
		// revision (it is put in the claim's transaction, and only there).
		st.Fence = meta.Kvs[0].ModRevision
		st.Machine = string(meta.Kvs[0].Value) // the last claim's ("" before it was recorded)
	}
	if len(claim.Kvs) > 0 {
		var v claimVal
		_ = json.Unmarshal(claim.Kvs[0].Value, &v)
		st.Held, st.Fence, st.Holder, st.Machine = true, claim.Kvs[0].CreateRevision, v.Holder, v.Machine
	}
	if len(done.Kvs) > 0 {
		var d doneVal
		_ = json.Unmarshal(done.Kvs[0].Value, &d)
		st.Finished, st.FinishedBy, st.Result, st.Machine = d.Outcome, d.Fence, d.Result, d.Machine
		st.FinishedAt, _ = time.Parse(time.RFC3339Nano, d.At)
	}
	return st, nil
}

// List implements queues.Lister: the claims held under prefix. Their
// LeaseUntil is left unknown (etcd keeps it on the lease: ListLeases).
func (e *Engine) List(parent context.Context, prefix string) (map[string]queues.ClaimState, error) {
	out, _, err := e.list(parent, prefix)
	return out, err
}

func (e *Engine) list(parent context.Context, prefix string) (map[string]queues.ClaimState, map[string]clientv3.LeaseID, error) {
	if err := e.connected(parent, "list", prefix); err != nil {
		return nil, nil, err
	}
	ctx, cancel := e.ctx(parent)
	defer cancel()
	r, err := e.cli.Get(ctx, e.claimKey(prefix), clientv3.WithPrefix())
	if err != nil {
		return nil, nil, e.fail("list", prefix, err)
	}
	out := map[string]queues.ClaimState{}
	leases := map[string]clientv3.LeaseID{}
	for _, kv := range r.Kvs {
		var v claimVal
		_ = json.Unmarshal(kv.Value, &v)
		key := strings.TrimPrefix(string(kv.Key), e.claimKey(""))
		out[key] = queues.ClaimState{Held: true, Fence: kv.CreateRevision, Holder: v.Holder, Machine: v.Machine}
		if kv.Lease != 0 {
			leases[key] = clientv3.LeaseID(kv.Lease)
		}
	}
	return out, leases, nil
}

// ListLeases implements queues.LeaseLister: List with each claim's
// LeaseUntil, the end of its lease as etcd has it now (renewals on any
// machine included), to the second: one more round trip per lease.
func (e *Engine) ListLeases(parent context.Context, prefix string) (map[string]queues.ClaimState, error) {
	out, leases, err := e.list(parent, prefix)
	if err != nil {
		return nil, err
	}
	ctx, cancel := e.ctx(parent)
	defer cancel()
	until := map[clientv3.LeaseID]time.Time{}
	for key, id := range leases {
		t, ok := until[id]
		if !ok {
			r, err := e.cli.TimeToLive(ctx, id)
			if err != nil {
				return nil, e.fail("list", prefix, err)
			}
			if r.TTL > 0 { // -1: the lease ended since the Get
				t = time.Now().Add(time.Duration(r.TTL) * time.Second)
			}
			until[id] = t
		}
		if t.IsZero() {
			delete(out, key)
			continue
		}
		st := out[key]
		st.LeaseUntil = t
		out[key] = st
	}
	return out, nil
}

// finishedBatch is how many done records one Finished transaction reads
// (etcd refuses transactions of more than 128 operations by default).
const finishedBatch = 100

// Finished implements queues.FinishedLister: the done records of keys,
// read finishedBatch at a time, each batch one transaction.
func (e *Engine) Finished(parent context.Context, prefix string, keys []string) (map[string]queues.ClaimState, error) {
	if err := e.connected(parent, "list", prefix); err != nil {
		return nil, err
	}
	ctx, cancel := e.ctx(parent)
	defer cancel()
	out := map[string]queues.ClaimState{}
	for len(keys) > 0 {
		batch := keys[:min(len(keys), finishedBatch)]
		keys = keys[len(batch):]
		ops := make([]clientv3.Op, len(batch))
		for i, k := range batch {
			ops[i] = clientv3.OpGet(e.doneKey(k))
		}
		r, err := e.cli.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return nil, e.fail("list", prefix, err)
		}
		for i, k := range batch {
			g := r.Responses[i].GetResponseRange()
			if g == nil || len(g.Kvs) == 0 {
				continue
			}
			var d doneVal
			_ = json.Unmarshal(g.Kvs[0].Value, &d)
			st := queues.ClaimState{Finished: d.Outcome, FinishedBy: d.Fence, Fence: d.Fence, Machine: d.Machine, Result: d.Result}
			st.FinishedAt, _ = time.Parse(time.RFC3339Nano, d.At)
			out[k] = st
		}
	}
	return out, nil
}
