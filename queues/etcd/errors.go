package etcd

import "fmt"

// ConfigError is a bad etcd: setting in tavern.md, with its position.
type ConfigError struct {
	Path      string
	Line, Col int
	Field     string // e.g. etcd.endpoints
	Msg       string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s: %s", e.Path, e.Line, e.Col, e.Field, e.Msg)
}

// Position is where the setting is (docstore.Positioner: check's problem
// and the --json error object's path, line and col).
func (e *ConfigError) Position() (string, int, int) { return e.Path, e.Line, e.Col }
