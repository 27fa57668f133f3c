package kit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StdioTransport is the MCP server's stdin/stdout transport, which
// answers every request it read before it reports the end of its input:
// a client that writes its requests and closes its end (a script piping
// a few lines in, `echo … | tavern mcp`) gets every answer. The SDK's own
// stdio transport ends the session as soon as the input ends, and the
// requests still being handled then are never answered.
//
// It follows the newline-delimited JSON-RPC both ways: a request (an id
// and a method) is pending until a response with its id is written, or
// the client cancels it (notifications/cancelled). At the end of input it
// waits until nothing is pending, or a write has failed (nobody would read
// the answers).
func StdioTransport(in io.Reader, out io.Writer) mcp.Transport {
	p := &pendingCalls{ids: map[string]bool{}}
	p.idle = newCond(p)
	w := &answerWriter{w: out, p: p}
	return &mcp.IOTransport{
		Reader: &drainingReader{r: in, p: p, w: w},
		Writer: w,
	}
}

// pendingCalls is the set of requests read and not yet answered.
type pendingCalls struct {
	mu     sync.Mutex
	idle   *sync.Cond // signalled when ids shrinks or broken is set
	ids    map[string]bool
	broken bool // a write failed
	// initID is the id of the initialize request read ("" before one);
	// version the protocol version its answer agreed on ("" until then).
	initID  string
	version string
}

func newCond(p *pendingCalls) *sync.Cond { return sync.NewCond(&p.mu) }

// frame is what pendingCalls reads of a JSON-RPC message.
type frame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
	Result struct {
		ProtocolVersion string `json:"protocolVersion"`
	} `json:"result"`
}

func idKey(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// frames calls fn for each message of the complete lines in *partial +
// data and keeps the incomplete last line in *partial.
func frames(partial *[]byte, data []byte, fn func(frame)) {
	*partial = append(*partial, data...)
	for {
		i := bytes.IndexByte(*partial, '\n')
		if i < 0 {
			return
		}
		line := bytes.TrimSpace((*partial)[:i])
		*partial = (*partial)[i+1:]
		if len(line) == 0 {
			continue
		}
		if line[0] == '[' { // a batch
			var fs []frame
			if json.Unmarshal(line, &fs) == nil {
				for _, f := range fs {
					fn(f)
				}
			}
			continue
		}
		var f frame
		if json.Unmarshal(line, &f) == nil {
			fn(f)
		}
	}
}

type drainingReader struct {
	r       io.Reader
	p       *pendingCalls
	w       *answerWriter // where refusals of bad lines go (nil: dropped)
	partial []byte        // the incomplete last line read
	ready   []byte        // whole lines checked, for the server to read
	eof     bool
}

// Read hands the server whole lines, each a JSON-RPC message or batch. A
// line that is not one (not JSON, or JSON that is not a message) would
// end the SDK's session at once, with the answers still owed lost: it is
// answered here with a JSON-RPC error (-32700 parse error, -32600
// invalid request) and left out.
func (d *drainingReader) Read(b []byte) (int, error) {
	for len(d.ready) == 0 {
		// One line at a time: the server reads the lines before it (an
		// initialize a batch waits for) before the next is checked.
		if i := bytes.IndexByte(d.partial, '\n'); i >= 0 {
			line := d.partial[:i]
			d.partial = d.partial[i+1:]
			d.take(line)
			continue
		}
		if d.eof {
			d.p.waitIdle()
			return 0, io.EOF
		}
		buf := make([]byte, max(len(b), 4096))
		n, err := d.r.Read(buf)
		d.partial = append(d.partial, buf[:n]...)
		switch {
		case err == io.EOF:
			// The last line may lack its newline.
			if i := bytes.IndexByte(d.partial, '\n'); i < 0 {
				d.take(d.partial)
				d.partial = nil
			} else {
				d.partial = append(d.partial, '\n')
			}
			d.eof = true
		case err != nil && n == 0:
			return 0, err
		}
	}
	n := copy(b, d.ready)
	d.ready = d.ready[n:]
	return n, nil
}

// take checks one line: a message goes to the server (its request id
// pending until answered), anything else is refused with an error.
func (d *drainingReader) take(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	code, id, why := checkLine(line)
	if code == 0 && line[0] == '[' {
		// MCP 2025-06-18 dropped batches, and the SDK ends the session
		// at one: wait for the version the initialize agrees on.
		if v := d.p.agreedVersion(); v >= "2025-06-18" {
			code, id, why = rpcInvalidRequest, json.RawMessage("null"), "invalid request: JSON-RPC batches are not supported in "+v+" and later"
		}
	}
	if code != 0 {
		if d.w != nil {
			d.w.refuse(code, id, why)
		}
		return
	}
	d.p.mu.Lock()
	var none []byte
	frames(&none, append(append([]byte(nil), line...), '\n'), func(f frame) {
		switch {
		case f.Method == "notifications/cancelled":
			delete(d.p.ids, idKey(f.Params.RequestID))
			d.p.idle.Broadcast()
		case f.Method != "" && idKey(f.ID) != "":
			d.p.ids[idKey(f.ID)] = true
			if f.Method == "initialize" {
				d.p.initID = idKey(f.ID)
			}
		}
	})
	d.p.mu.Unlock()
	d.ready = append(append(d.ready, line...), '\n')
}

// JSON-RPC error codes for lines that are not messages.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
)

// checkLine returns 0 for a line that is a JSON-RPC 2.0 message (or a
// batch of them), else the error code, the id to answer with (null when
// none can be told) and why.
func checkLine(line []byte) (code int, id json.RawMessage, why string) {
	null := json.RawMessage("null")
	if !json.Valid(line) {
		return rpcParseError, null, "parse error: the line is not JSON"
	}
	if line[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(line, &batch) != nil || len(batch) == 0 {
			return rpcInvalidRequest, null, "invalid request: an empty batch"
		}
		for _, m := range batch {
			if code, _, why := checkMessage(m); code != 0 {
				return code, null, "invalid request in a batch: " + why
			}
		}
		return 0, nil, ""
	}
	return checkMessage(line)
}

func checkMessage(raw json.RawMessage) (int, json.RawMessage, string) {
	null := json.RawMessage("null")
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return rpcInvalidRequest, null, "invalid request: not a JSON object"
	}
	id := null
	if r, ok := m["id"]; ok {
		r = bytes.TrimSpace(r)
		switch {
		case len(r) > 0 && (r[0] == '"' || r[0] == '-' || (r[0] >= '0' && r[0] <= '9')):
			id = r
		case string(r) == "null":
		default:
			return rpcInvalidRequest, null, "invalid request: the id is not a string or a number"
		}
	}
	if v, _ := m["jsonrpc"]; string(bytes.TrimSpace(v)) != `"2.0"` {
		return rpcInvalidRequest, id, `invalid request: "jsonrpc" is not "2.0"`
	}
	if meth, ok := m["method"]; ok {
		var name string
		if json.Unmarshal(meth, &name) != nil || name == "" {
			return rpcInvalidRequest, id, "invalid request: the method is not a name"
		}
		return 0, nil, ""
	}
	_, res := m["result"]
	_, e := m["error"]
	if string(id) == "null" || (!res && !e) {
		return rpcInvalidRequest, id, "invalid request: neither a method nor a response"
	}
	return 0, nil, ""
}

func (d *drainingReader) Close() error {
	if c, ok := d.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// agreedVersion is the protocol version the session's initialize agreed
// on, once it is answered ("" when there was none, or the writes failed).
func (p *pendingCalls) agreedVersion() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.initID != "" && p.ids[p.initID] && !p.broken {
		p.idle.Wait()
	}
	return p.version
}

// waitIdle returns once every request read has been answered, or a write
// failed.
func (p *pendingCalls) waitIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.ids) > 0 && !p.broken {
		p.idle.Wait()
	}
}

type answerWriter struct {
	w       io.Writer
	p       *pendingCalls
	partial []byte
	wmu     sync.Mutex // one Write at a time: the server's and refusals
}

// refuse writes a JSON-RPC error for a line that is not a message.
func (a *answerWriter) refuse(code int, id json.RawMessage, why string) {
	msg, _ := json.Marshal(why)
	a.Write([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`+"\n", id, code, msg)))
}

func (a *answerWriter) Write(b []byte) (int, error) {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	n, err := a.w.Write(b)
	a.p.mu.Lock()
	defer a.p.mu.Unlock()
	if err != nil {
		a.p.broken = true
		a.p.idle.Broadcast()
		return n, err
	}
	frames(&a.partial, b[:n], func(f frame) {
		if f.Method == "" {
			if k := idKey(f.ID); k != "" && k == a.p.initID && f.Result.ProtocolVersion != "" {
				a.p.version = f.Result.ProtocolVersion
			}
			if k := idKey(f.ID); k != "" && a.p.ids[k] {
				delete(a.p.ids, k)
				a.p.idle.Broadcast()
			}
		}
	})
	return n, nil
}

// Close does not close the underlying writer (stdout outlives the
// session).
func (a *answerWriter) Close() error { return nil }
