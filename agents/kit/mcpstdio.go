package kit

import (
	"bytes"
	"encoding/json"
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
	return &mcp.IOTransport{
		Reader: &drainingReader{r: in, p: p},
		Writer: &answerWriter{w: out, p: p},
	}
}

// pendingCalls is the set of requests read and not yet answered.
type pendingCalls struct {
	mu     sync.Mutex
	idle   *sync.Cond // signalled when ids shrinks or broken is set
	ids    map[string]bool
	broken bool // a write failed
}

func newCond(p *pendingCalls) *sync.Cond { return sync.NewCond(&p.mu) }

// frame is what pendingCalls reads of a JSON-RPC message.
type frame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
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
	partial []byte
	eof     bool
}

func (d *drainingReader) Read(b []byte) (int, error) {
	if d.eof {
		d.p.waitIdle()
		return 0, io.EOF
	}
	n, err := d.r.Read(b)
	if n > 0 {
		d.p.mu.Lock()
		frames(&d.partial, b[:n], func(f frame) {
			switch {
			case f.Method == "notifications/cancelled":
				delete(d.p.ids, idKey(f.Params.RequestID))
				d.p.idle.Broadcast()
			case f.Method != "" && idKey(f.ID) != "":
				d.p.ids[idKey(f.ID)] = true
			}
		})
		d.p.mu.Unlock()
	}
	if err == io.EOF {
		// The last bytes must reach the server before the wait for
		// their answers: report the end on the next call.
		d.eof = true
		if n > 0 {
			return n, nil
		}
		d.p.waitIdle()
	}
	return n, err
}

func (d *drainingReader) Close() error {
	if c, ok := d.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
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
}

func (a *answerWriter) Write(b []byte) (int, error) {
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
