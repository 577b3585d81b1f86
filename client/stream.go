package client

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

// The request stream (wire.StreamPath): the calls of one lease and bulk
// renewals (wire.StreamCarries) go over one connection per server, many
// at once, instead of a connection each. The server serves each frame as
// the request it stands for, so an answer is the same as over a request
// of its own: only the transport differs. A server that refuses the
// stream (an older one) is asked again only after streamRetryAfter; the
// calls go as requests of their own meanwhile.

// streamIdle closes a stream that has had no call in flight for this long.
const streamIdle = 30 * time.Second

// streamRetryAfter is how long a server that refused to open a stream
// gets its calls as requests of their own.
const streamRetryAfter = 30 * time.Second

// streamWriteTimeout bounds each write of frames (wire.TimedWriter).
const streamWriteTimeout = 10 * time.Second

// streams holds a Client's open streams, one per server address.
type streams struct {
	tls  *tls.Config   // nil for plain HTTP
	idle time.Duration // streamIdle, shorter in tests
	mu   sync.Mutex
	// open is by address; refused says until when an address that
	// refused the stream gets requests of their own.
	open    map[string]*stream
	refused map[string]time.Time
	dialing map[string]bool
}

func newStreams(tc *tls.Config) *streams {
	return &streams{tls: tc, idle: streamIdle, open: map[string]*stream{}, refused: map[string]time.Time{}, dialing: map[string]bool{}}
}

// errStreamEnded is the error of a call whose stream ended before its
// answer came. It does not wrap the connection's own error (an EOF): a
// stream that opened proved the address is tenure's API, which an EOF
// of a request of its own could not (closedUnanswered).
var errStreamEnded = errors.New("request stream ended")

// errStreamRefused is the error of a stream the server would not open,
// or of a frame it cannot carry: the call goes as a request of its own.
var errStreamRefused = errors.New("request stream refused")

// get returns the open stream to addr, or nil. Without one it starts
// opening one in the background (unless addr refused one lately) and
// returns nil: the call goes as a request of its own, and no call waits
// for a stream to open, so a process that makes one call pays nothing.
func (ss *streams) get(c *Client, addr string) *stream {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s := ss.open[addr]; s != nil && !s.ended() {
		return s
	}
	if ss.dialing[addr] || time.Now().Before(ss.refused[addr]) {
		return nil
	}
	ss.dialing[addr] = true
	go ss.openStream(c, addr)
	return nil
}

// openStream opens a stream to addr within c's Timeout and makes it the
// one get returns. A server that refuses it, or that cannot be reached,
// is not asked again for streamRetryAfter.
func (ss *streams) openStream(c *Client, addr string) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	s, err := ss.dial(ctx, c, addr)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.dialing, addr)
	if err != nil {
		c.log.Debug("request stream not opened; calls go as requests of their own", "address", addr, "error", err)
		ss.refused[addr] = time.Now().Add(streamRetryAfter)
		return
	}
	ss.open[addr] = s
	go s.read(func() {
		ss.mu.Lock()
		if ss.open[addr] == s {
			delete(ss.open, addr)
		}
		ss.mu.Unlock()
	})
}

// dial opens a stream to addr ("http://host:port" or "https://...").
func (ss *streams) dial(ctx context.Context, c *Client, addr string) (*stream, error) {
	u, err := url.Parse(addr)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	if u.Scheme == "https" {
		tc := ss.tls.Clone()
		tc.NextProtos = []string{"http/1.1"} // an upgrade needs HTTP/1.1
		if tc.ServerName == "" {
			tc.ServerName = u.Hostname()
		}
		tconn := tls.Client(conn, tc)
		if err := tconn.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, err
		}
		conn = tconn
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	req, _ := http.NewRequest(http.MethodGet, addr+wire.StreamPath, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", wire.StreamProtocol)
	req.Header.Set("User-Agent", "tenure-go-client/1")
	if c.cfg.Token != "" {
		req.Header.Set(HeaderToken, c.cfg.Token)
	}
	in := bufio.NewReader(conn)
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, err
	}
	resp, err := http.ReadResponse(in, req)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		resp.Body.Close()
		conn.Close() // its answer unread: the connection is not reused
		return nil, fmt.Errorf("%w: %s answered %s", errStreamRefused, addr, resp.Status)
	}
	conn.SetDeadline(time.Time{})
	s := &stream{conn: conn, in: in, out: bufio.NewWriterSize(wire.TimedWriter{Conn: conn, Timeout: streamWriteTimeout}, 16<<10),
		idle: ss.idle, pending: map[uint32]chan wire.StreamAnswer{}}
	s.idleLocked()
	return s, nil
}

// stream is one open request stream.
type stream struct {
	conn net.Conn
	in   *bufio.Reader
	idle time.Duration

	// wmu guards out; writers counts the calls waiting for it, so that
	// the last one flushes what all of them wrote.
	wmu     sync.Mutex
	out     *bufio.Writer
	writers atomic.Int32

	// lastRead is when the last answer came (UnixNano).
	lastRead atomic.Int64

	mu      sync.Mutex
	nextID  uint32
	pending map[uint32]chan wire.StreamAnswer
	err     error // set when the stream ended
}

// idleLocked arms the read deadline that closes an idle stream, or clears
// it while a call is in flight. s.mu is held (or s is not shared yet).
func (s *stream) idleLocked() {
	if len(s.pending) == 0 {
		s.conn.SetReadDeadline(time.Now().Add(s.idle))
	} else {
		s.conn.SetReadDeadline(time.Time{})
	}
}

// read dispatches answers until the stream ends; then it fails the calls
// in flight and calls gone.
func (s *stream) read(gone func()) {
	defer gone()
	for {
		a, err := wire.ReadStreamAnswer(s.in)
		if err != nil {
			s.close(fmt.Errorf("%w: %v", errStreamEnded, err))
			return
		}
		s.lastRead.Store(time.Now().UnixNano())
		s.mu.Lock()
		ch := s.pending[a.ID]
		delete(s.pending, a.ID)
		s.idleLocked()
		s.mu.Unlock()
		if ch != nil {
			ch <- a // buffered; nil when the call gave up
		}
	}
}

// close ends the stream with err: the calls in flight fail with it.
func (s *stream) close(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	pending := s.pending
	s.pending = map[uint32]chan wire.StreamAnswer{}
	s.mu.Unlock()
	s.conn.Close()
	for _, ch := range pending {
		close(ch)
	}
}

// roundTrip sends one request frame and waits for its answer until ctx
// is done. An error is the transport's: the outcome is unknown unless
// the frame was never written.
func (s *stream) roundTrip(ctx context.Context, method, target string, body []byte) (wire.StreamAnswer, error) {
	ch := make(chan wire.StreamAnswer, 1)
	s.mu.Lock()
	if s.err != nil {
		err := s.err
		s.mu.Unlock()
		return wire.StreamAnswer{}, err
	}
	s.nextID++
	id := s.nextID
	s.pending[id] = ch
	sent := time.Now()
	s.idleLocked()
	s.mu.Unlock()

	s.writers.Add(1)
	s.wmu.Lock()
	err := wire.WriteStreamRequest(s.out, wire.StreamRequest{ID: id, Method: method, Target: target, Body: body})
	if s.writers.Add(-1) == 0 && err == nil {
		err = s.out.Flush()
	}
	s.wmu.Unlock()
	if err != nil {
		if errors.Is(err, wire.ErrStreamFrame) {
			s.forget(id)
			return wire.StreamAnswer{}, fmt.Errorf("%w: %w", errStreamRefused, err) // too large: send it on its own
		}
		err = fmt.Errorf("%w: write: %v", errStreamEnded, err)
		s.close(err)
		return wire.StreamAnswer{}, err
	}
	select {
	case a, ok := <-ch:
		if !ok {
			s.mu.Lock()
			err := s.err
			s.mu.Unlock()
			return wire.StreamAnswer{}, err
		}
		return a, nil
	case <-ctx.Done():
		s.forget(id)
		if s.lastRead.Load() < sent.UnixNano() {
			// Nothing came back since this call was sent: the server or
			// the path to it may be gone (a partition sends no reset).
			// Later calls get a new stream rather than wait on this one,
			// as a timed-out request closes its connection.
			s.close(fmt.Errorf("%w: no answer for %v", errStreamEnded, time.Since(sent).Round(time.Millisecond)))
		}
		return wire.StreamAnswer{}, ctx.Err()
	}
}

// ended reports whether the stream has ended.
func (s *stream) ended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err != nil
}

// forget drops the call id, whose answer nobody waits for any more.
func (s *stream) forget(id uint32) {
	s.mu.Lock()
	delete(s.pending, id)
	s.idleLocked()
	s.mu.Unlock()
}

// streamable reports whether r goes over a stream: a call the stream
// carries that does not wait on purpose, from a Client with streams on.
func (c *Client) streamable(r *request) bool {
	return c.streams != nil && r.wait == 0 && r.raw == nil && r.maxAnswer == 0 &&
		wire.StreamCarries(r.method, r.path)
}

// attemptStream is attempt over the stream to addr. ok is false when the
// stream could not be used without a request having been sent (refused,
// or a frame too large): the caller sends r as a request of its own.
func (c *Client) attemptStream(ctx context.Context, addr string, r *request, body []byte) (resp *response, leaderHdr string, ok bool, err error) {
	s := c.streams.get(c, addr)
	if s == nil {
		return nil, "", false, nil
	}
	actx, cancel := context.WithTimeout(ctx, c.attemptTimeout(r))
	defer cancel()
	target := r.path
	if q := encodeQuery(r.query); q != "" {
		target += "?" + q
	}
	sentAt := time.Now()
	a, err := s.roundTrip(actx, r.method, target, body)
	if errors.Is(err, errStreamRefused) {
		return nil, "", false, nil
	}
	if err != nil {
		return nil, "", true, &transportError{err: err}
	}
	hr := &http.Response{StatusCode: a.Status, Header: a.Header}
	resp, leaderHdr, err = c.answer(hr, a.Body, addr, sentAt)
	return resp, leaderHdr, true, err
}
