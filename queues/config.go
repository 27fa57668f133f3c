package queues

import (
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// DefaultLease is tavern.md's default_lease: the lease of a queue created
// without one, and of a one-shot token acquire or reservation. Absent (or
// no tavern.md), it is the schema's default, 5m. Present but not a
// positive duration, it is an error, the *schema.FieldError at its line in
// tavern.md (schema.ErrInvalid): bad input is reported, never replaced by
// the default.
func DefaultLease(s *docstore.Store) (time.Duration, error) {
	def := defaultDur(schema.Config, "default_lease")
	cfg, err := s.Get(docstore.ConfigFile)
	if err != nil || !cfg.Has("default_lease") {
		return def, nil
	}
	if err := configFieldErr(cfg, "default_lease"); err != nil {
		return 0, err
	}
	return time.ParseDuration(cfg.String("default_lease"))
}

// defaultMaxAttempts is tavern.md's default_max_attempts (3 when absent);
// a value the schema refuses is its *schema.FieldError.
func defaultMaxAttempts(s *docstore.Store) (int, error) {
	cfg, err := s.Get(docstore.ConfigFile)
	if err != nil || !cfg.Has("default_max_attempts") {
		return 3, nil
	}
	if err := configFieldErr(cfg, "default_max_attempts"); err != nil {
		return 0, err
	}
	n, _ := cfg.Int("default_max_attempts")
	return int(n), nil
}

// configFieldErr is the schema's complaint about one field of tavern.md,
// with its position, or nil.
func configFieldErr(cfg *docstore.Doc, field string) error {
	for _, e := range cfg.Validate(false) {
		if e.Field == field {
			return e
		}
	}
	return nil
}
