package schema

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func configNode(t *testing.T, src string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Content[0]
}

// The values of etcd: and sync: are the schema's to refuse, under any
// coordination; a password is refused under etcd and a warning elsewhere.
func TestConfigSections(t *testing.T) {
	for _, tc := range []struct {
		name, src  string
		errs, warn []string // "field: message start"
	}{
		{"good", "coordination: etcd\netcd:\n  endpoints: a:1, http://b\n  lease_ttl: 10\n  op_timeout: 3s\n", nil, nil},
		{"endpoint port", "coordination: etcd\netcd:\n  endpoints: [a:b]\n", []string{`etcd.endpoints: "a:b": port "b"`}, nil},
		{"endpoint no port", "coordination: etcd\netcd:\n  endpoints: [a]\n", []string{`etcd.endpoints: "a": want host:port`}, nil},
		{"endpoint url", "coordination: etcd\netcd:\n  endpoints: [\"http://\"]\n", []string{`etcd.endpoints: "http://": want host:port or a URL`}, nil},
		{"lease 0", "coordination: etcd\netcd:\n  lease_ttl: 0\n", []string{`etcd.lease_ttl: "0": must be a positive duration`}, nil},
		{"user alone", "coordination: etcd\netcd:\n  username: u\n", []string{"etcd.username: a username goes with a password"}, nil},
		{"user and password", "coordination: etcd\netcd:\n  username: u\n  password_env: P\n", nil, nil},
		{"unix", "coordination: etcd\netcd:\n  endpoints: [\"unix:///run/etcd.sock\", \"unix:etcd.sock\"]\n", nil, nil},
		{"scheme", "coordination: etcd\netcd:\n  endpoints: [\"htps://a:1\"]\n", []string{`etcd.endpoints: "htps://a:1": want http://`}, nil},
		{"tls over http", "coordination: etcd\netcd:\n  endpoints: [\"http://a:1\"]\n  tls:\n    ca: c.pem\n", []string{`etcd.endpoints: "http://a:1": etcd speaks plain text`}, nil},
		{"tls over https", "coordination: etcd\netcd:\n  endpoints: [\"https://a:1\", \"b:2\"]\n  tls:\n    ca: c.pem\n", nil, nil},
		{"tls pair", "coordination: etcd\netcd:\n  tls:\n    key: k\n", []string{"etcd.tls: cert and key go together"}, nil},
		{"tls typo", "coordination: etcd\netcd:\n  tls:\n    cat: k\n", []string{`etcd.tls.cat: unknown setting (did you mean "ca"?)`}, nil},
		{"password etcd", "coordination: etcd\netcd:\n  password: x\n", []string{"etcd.password: tavern.md is synced"}, nil},
		{"password local", "etcd:\n  password: x\n", nil, []string{"etcd: not used: coordination is local", "etcd.password: tavern.md is synced"}},
		{"sync", "sync:\n  every: 0s\n  ref: main\n  claim_ttl: 5\n", []string{`sync.every: "0s": must be a positive`, `sync.ref: "main": want a full ref`, "sync.claim_ttl: 5 is not a duration: a number needs its unit"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := configNode(t, "schema_version: 1\n"+tc.src)
			check := func(what string, got []*FieldError, want []string) {
				t.Helper()
				if len(got) != len(want) {
					t.Fatalf("%s: got %v, want %d: %q", what, got, len(want), want)
				}
				for i, e := range got {
					if s := e.Field + ": " + e.Msg; !strings.HasPrefix(s, want[i]) {
						t.Errorf("%s %d: got %q, want %q...", what, i, s, want[i])
					}
				}
			}
			check("errors", Config.Validate(m, false), tc.errs)
			check("warnings", Config.Warnings(m), tc.warn)
		})
	}
}
