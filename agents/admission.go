package agents

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// PoolAdmissionEnv carries a pool run's admission token to its drones
// (RunPool sets it in each drone's environment; the spawn wrapper drops
// it from its child's). A drone presents it with spawn --admitted-by-pool
// to skip the budget check its pool already made.
const PoolAdmissionEnv = "TAVERN_POOL_ADMISSION"

// newAdmission draws a pool run's admission token and writes its digest
// as the note of the pool's liveness lock, which the run holds: the token
// itself is only in the run's memory and its drones' environment.
func newAdmission(lk *docstore.Lock) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(b[:])
	if err := lk.WriteNote([]byte(admissionDigest(tok))); err != nil {
		return "", err
	}
	return tok, nil
}

func admissionDigest(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

// CheckPoolAdmission is the check of a spawn that says pool admitted it
// (its budgets were checked by the pool, so the spawn skips them): pool's
// run is live (it holds the pool's liveness lock), token is that run's
// admission token (its digest is the lock's note), and, where the
// processes holding a lock can be listed (Linux, /proc showing the
// holder), parent — the spawn's parent process — is the one that holds
// it: drones are the pool run's own children. Anything else is ErrNotAdmitted, saying which part
// failed. Not a boundary against a process of the same Unix user bent on
// forging (it can read a drone's environment), but a hand-typed flag,
// a script or an agent's child can no longer skip the budgets.
func CheckPoolAdmission(s *docstore.Store, pool, token string, parent int) error {
	if pool == "" {
		return fmt.Errorf("%w: no --pool named", ErrNotAdmitted)
	}
	if err := ValidAgentName(pool); err != nil {
		return err // the pool name rule, as pool run's
	}
	key := schema.PoolLockKey(pool)
	free, err := s.LockFree(key)
	if err != nil {
		return err
	}
	if free {
		return fmt.Errorf("%w: pool %s is not running (only its run's drones are admitted by it)", ErrNotAdmitted, pool)
	}
	if token == "" {
		return fmt.Errorf("%w: no admission token ($%s): only pool %s's run starts its drones admitted", ErrNotAdmitted, PoolAdmissionEnv, pool)
	}
	note, err := s.LockNote(key)
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare(note, []byte(admissionDigest(token))) != 1 {
		return fmt.Errorf("%w: the admission token is not that of pool %s's current run", ErrNotAdmitted, pool)
	}
	holders, err := s.LockHolders(key)
	if errors.Is(err, docstore.ErrNoProc) {
		return nil // the token is the check left
	}
	if err != nil {
		return err
	}
	// Held, yet no holder listed: /proc does not show it (another user's
	// process, a kernel without fdinfo lock lines). The token is the
	// check left; refusing would stop every drone of a real pool.
	if len(holders) > 0 && !slices.Contains(holders, parent) {
		return fmt.Errorf("%w: the parent process (pid %d) is not pool %s's run", ErrNotAdmitted, parent, pool)
	}
	return nil
}
