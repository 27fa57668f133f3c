package schema

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The settings of tavern.md's etcd: and sync: sections, with their types:
// a bad value is refused at its line by every command (docstore.Open),
// not only by the engine that reads it, which under local coordination
// (etcd:) or without tavern sync (sync:) never runs. What needs this
// machine's files or environment (tls files, password_env, endpoints from
// $TAVERN_ETCD_ENDPOINTS) is still checked by the engine when it opens.
var (
	etcdTLSSettings = []Field{
		{Name: "ca", Type: String}, {Name: "cert", Type: String},
		{Name: "key", Type: String}, {Name: "server_name", Type: String},
	}
	etcdSettings = []Field{
		{Name: "endpoints", Type: Strings, Pattern: "endpoints"},
		{Name: "prefix", Type: String},
		{Name: "lease_ttl", Type: Duration, Pattern: "seconds", Min: atLeast(1), ZeroWhy: "a lease of 0s expires as it is made"},
		{Name: "dial_timeout", Type: Duration, Pattern: "seconds", Min: atLeast(1), ZeroWhy: "no connection is made in 0s"},
		{Name: "op_timeout", Type: Duration, Pattern: "seconds", Min: atLeast(1), ZeroWhy: "no request is answered in 0s"},
		{Name: "username", Type: String},
		{Name: "password", Type: String},
		{Name: "password_env", Type: String},
		{Name: "tls", Type: Map, Settings: etcdTLSSettings},
	}
	syncSettings = []Field{
		{Name: "remote", Type: String},
		{Name: "ref", Type: String, Pattern: "ref"},
		{Name: "every", Type: Duration, Min: atLeast(1), ZeroWhy: "a round every 0s never rests"},
		{Name: "claim_ttl", Type: Duration, Min: atLeast(1), ZeroWhy: "a claim of 0s expires as it is made"},
	}
)

// endpointList is the endpoints of a well-formed endpoints: setting.
func endpointList(n *yaml.Node) []string {
	var list []string
	switch n.Kind {
	case yaml.ScalarNode:
		for _, e := range strings.Split(n.Value, ",") {
			list = append(list, strings.TrimSpace(e))
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if c.Kind == yaml.AliasNode && c.Alias != nil {
				c = c.Alias
			}
			list = append(list, c.Value)
		}
	}
	return list
}

// checkEndpoints checks etcd's endpoints: a list, or one comma-separated
// string, of host:port, URLs with a host, or unix: sockets. What each
// names is only known when etcd is dialled.
func checkEndpoints(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if c.Kind == yaml.AliasNode && c.Alias != nil {
				c = c.Alias
			}
			if c.Kind != yaml.ScalarNode || c.Tag != "!!str" {
				return fmt.Sprintf("want a list of host:port strings, got %s", describe(c))
			}
		}
	default:
		return "want a list of host:port strings, got a mapping"
	}
	for _, e := range endpointList(n) {
		if msg := checkEndpoint(e); msg != "" {
			return msg
		}
	}
	return ""
}

// CheckEndpoint says what is wrong with an etcd endpoint, "" if nothing:
// the rule tavern.md's etcd.endpoints follows, for the endpoints that
// come from elsewhere ($TAVERN_ETCD_ENDPOINTS).
func CheckEndpoint(e string) string { return checkEndpoint(e) }

func checkEndpoint(e string) string {
	if strings.HasPrefix(e, "unix:") || strings.HasPrefix(e, "unixs:") {
		return "" // a socket: unix:path, unix:///abs/path
	}
	hostport := e
	if strings.Contains(e, "://") {
		u, err := url.Parse(e)
		if err != nil || u.Host == "" {
			return fmt.Sprintf("%q: want host:port or a URL with a host (http://host:port)", e)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return fmt.Sprintf("%q: want http://, https://, unix: or host:port", e)
		}
		if u.Port() == "" {
			return ""
		}
		hostport = u.Host
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || host == "" || strings.ContainsAny(host, " \t") {
		return fmt.Sprintf("%q: want host:port (e.g. 127.0.0.1:2379)", e)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Sprintf("%q: port %q is not a number from 1 to 65535", e, port)
	}
	return ""
}

// configRules are tavern.md's rules across fields.
//
// etcd.password is refused under coordination: etcd (tavern.md is synced
// to every machine, and committed: the password goes in the variable
// password_env names), as etcd refuses it when it opens. Under any other
// coordination the etcd: section is not read, so the password changes
// nothing that runs and is a warning, not a refusal of every command:
// but it is a secret in a shared file, and its section not being read
// may itself be the mistake (coordination: left out or set elsewhere
// runs local, each machine claiming on its own). An etcd: section under
// another coordination is a warning for that reason too.
func configRules(m *yaml.Node) (errs, warns []*FieldError) {
	coord := "local"
	if v := mapValue(m, "coordination"); v != nil && v.Kind == yaml.ScalarNode && v.Value != "" && !isNull(v) {
		coord = v.Value
	}
	etcdKey, etcd := mapEntry(m, "etcd")
	if etcd == nil || etcd.Kind != yaml.MappingNode {
		return nil, nil
	}
	if coord != "etcd" {
		warns = append(warns, &FieldError{Line: etcdKey.Line, Col: etcdKey.Column, Field: "etcd",
			Msg: "not used: coordination is " + coord + " (coordination: etcd to use it)"})
	}
	if k, _ := mapEntry(etcd, "password"); k != nil {
		msg := "tavern.md is synced to every machine: name an environment variable with password_env instead"
		if coord == "etcd" {
			errs = append(errs, &FieldError{Line: k.Line, Col: k.Column, Field: "etcd.password", Msg: msg})
		} else {
			warns = append(warns, &FieldError{Line: k.Line, Col: k.Column, Field: "etcd.password",
				Msg: msg + " (unused: coordination is " + coord + ")"})
		}
	}
	// etcd's client authenticates only with both (clientv3 ignores a
	// username or a password alone): one without the other is refused.
	uk, user := mapEntry(etcd, "username")
	pk, pw := mapEntry(etcd, "password_env")
	switch {
	case given(user) && !given(pw):
		errs = append(errs, &FieldError{Line: uk.Line, Col: uk.Column, Field: "etcd.username", Msg: "a username goes with a password (etcd.password_env): etcd ignores either alone"})
	case given(pw) && !given(user):
		errs = append(errs, &FieldError{Line: pk.Line, Col: pk.Column, Field: "etcd.password_env", Msg: "a password goes with a username (etcd.username): etcd ignores either alone"})
	}
	// etcd's client drops TLS for an http:// endpoint (clientv3's
	// CredsDrop): tls: would be ignored, the password sent in clear.
	if _, tls := mapEntry(etcd, "tls"); tls != nil && tls.Kind == yaml.MappingNode && len(tls.Content) > 0 {
		if ek, eps := mapEntry(etcd, "endpoints"); eps != nil {
			for _, e := range endpointList(eps) {
				if strings.HasPrefix(e, "http://") {
					errs = append(errs, &FieldError{Line: ek.Line, Col: ek.Column, Field: "etcd.endpoints",
						Msg: fmt.Sprintf("%q: etcd speaks plain text to an http:// endpoint, without the tls settings: write https://", e)})
					break
				}
			}
		}
	}
	if tk, tls := mapEntry(etcd, "tls"); tls != nil && tls.Kind == yaml.MappingNode {
		if given(mapValue(tls, "cert")) != given(mapValue(tls, "key")) {
			errs = append(errs, &FieldError{Line: tk.Line, Col: tk.Column, Field: "etcd.tls", Msg: "cert and key go together"})
		}
	}
	return errs, warns
}

// given: a setting present with a value.
func given(n *yaml.Node) bool { return n != nil && !isNull(n) && n.Value != "" }

// mapEntry returns the key and value nodes of name in a mapping node.
func mapEntry(m *yaml.Node, name string) (key, val *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == name {
			v := m.Content[i+1]
			if v.Kind == yaml.AliasNode && v.Alias != nil {
				v = v.Alias
			}
			return m.Content[i], v
		}
	}
	return nil, nil
}

func mapValue(m *yaml.Node, name string) *yaml.Node {
	_, v := mapEntry(m, name)
	return v
}
