package httpapi

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenure-io/tenure/client/wire"
	"golang.org/x/net/http/httpguts"
	"golang.org/x/sync/semaphore"
)

// The request stream (wire.StreamPath, docs/http-api.md): one connection
// carries many requests at once, each answered in a frame of its own as
// soon as it is done, and the answers that are ready together leave in
// one write. It spares what one HTTP/1.1 request costs each call (a read
// and a write system call, the request's parsing), which is most of the
// leader's CPU per renewal or read (test/bench/results/2026-11-29-profiles.md).
//
// Each frame is served as the HTTP request it stands for, by the same
// handler as the request: its route, its token check (the token the
// stream was opened with, checked again for every frame, so a token
// deleted while the stream is open is refused at the next frame), its
// admission (a frame over -http-max-active waits or is answered 429, as a
// request is), forwarding to the leader, and the request metrics.

// streamWriteTimeout bounds each write of answers: a client that stops
// reading loses its stream. A variable for tests.
var streamWriteTimeout = 10 * time.Second

// stream upgrades the connection to a request stream and serves it until
// the client closes it, is idle for -http-idle-timeout, or breaks a frame
// rule.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) error {
	if !httpguts.HeaderValuesContainsToken(r.Header["Connection"], "upgrade") || !strings.EqualFold(r.Header.Get("Upgrade"), wire.StreamProtocol) {
		return badRequest(wire.CodeInvalidQuery, "Upgrade", fmt.Sprintf("GET %s needs the headers Connection: Upgrade and Upgrade: %s", wire.StreamPath, wire.StreamProtocol))
	}
	if r.ProtoMajor != 1 {
		return badRequest(wire.CodeInvalidQuery, "Upgrade", "the request stream needs HTTP/1.1")
	}
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return fmt.Errorf("request stream: %w", err)
	}
	leave := leaveFunc(r.Context())
	defer leave()
	defer conn.Close()
	conn.SetDeadline(time.Time{})
	rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + wire.StreamProtocol + "\r\n\r\n")
	if err := rw.Flush(); err != nil {
		return nil
	}
	st := &streamConn{s: s, conn: conn, open: r,
		slots: make(chan struct{}, wire.MaxStreamInFlight), bytes: semaphore.NewWeighted(wire.MaxStreamBytesInWork),
		jobs: make(chan frameJob), out: bufio.NewWriterSize(wire.TimedWriter{Conn: conn, Timeout: streamWriteTimeout}, 32<<10)}
	// Read the connection itself, not through net/http's reader of it,
	// unless that reader holds frames already (a client that sent them
	// before the answer to its upgrade).
	in := rw.Reader
	if in.Buffered() == 0 {
		in = bufio.NewReaderSize(conn, 32<<10)
	}
	st.serve(in)
	return nil
}

// streamConn is one open request stream.
type streamConn struct {
	s    *Server
	conn net.Conn
	open *http.Request // the request that opened the stream
	// slots and bytes bound the frames in work (read, and not yet
	// written back): wire.MaxStreamInFlight of them, of
	// wire.MaxStreamBytesInWork in all (a library's weighted semaphore:
	// golang.org/x/sync).
	slots chan struct{}
	bytes *semaphore.Weighted
	// jobs hands a frame to an idle worker; idle counts them.
	jobs chan frameJob
	idle atomic.Int32
	// Each worker writes its answer to out under wmu; writers counts the
	// workers writing or waiting to, so that the last of them flushes
	// what all wrote. failed is set once a write failed; cancel ends the
	// stream.
	wmu     sync.Mutex
	out     *bufio.Writer
	writers atomic.Int32
	failed  bool
	cancel  context.CancelFunc
}

// frameJob is a frame for a worker, and what frees its place.
type frameJob struct {
	f    wire.StreamRequest
	done func()
}

// maxIdleWorkers is how many workers of a stream wait for its next frame
// once theirs is answered; the others end. A worker keeps the stack its
// frames grew: a goroutine per frame spent a tenth of the leader's CPU
// growing a new one (test/bench/results/2026-11-29-profiles.md).
const maxIdleWorkers = 8

// serve reads frames and hands each to a worker, at most
// wire.MaxStreamInFlight at once; each worker writes its answer.
func (st *streamConn) serve(in *bufio.Reader) {
	ctx, cancel := context.WithCancel(st.open.Context())
	defer cancel()
	st.cancel = cancel
	var work sync.WaitGroup
	idle := cmp.Or(st.s.cfg.StreamIdleTimeout, DefaultConfig().StreamIdleTimeout)
	for ctx.Err() == nil {
		st.conn.SetReadDeadline(time.Now().Add(idle))
		f, err := wire.ReadStreamRequest(in)
		if err != nil {
			if errors.Is(err, wire.ErrStreamFrame) {
				st.s.log.Debug("request stream closed", "remote", st.open.RemoteAddr, "error", err)
			}
			break
		}
		select {
		case st.slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		weight := min(int64(8+len(f.Method)+len(f.Target)+len(f.Body)), wire.MaxStreamBytesInWork)
		if st.bytes.Acquire(ctx, weight) != nil {
			<-st.slots
			break
		}
		done := func() {
			st.bytes.Release(weight)
			<-st.slots
		}
		job := frameJob{f: f, done: done}
		select {
		case st.jobs <- job: // an idle worker took it
		default:
			work.Go(func() { st.worker(ctx, job) })
		}
	}
	cancel()
	work.Wait()
}

// worker serves job, then the frames handed to it while it waits idle,
// until the stream ends or maxIdleWorkers others already wait.
func (st *streamConn) worker(ctx context.Context, job frameJob) {
	for {
		st.answer(st.serveFrameSafely(ctx, job.f), job.done)
		if ctx.Err() != nil {
			return
		}
		if st.idle.Add(1) > maxIdleWorkers {
			st.idle.Add(-1)
			return
		}
		select {
		case job = <-st.jobs:
			st.idle.Add(-1)
		case <-ctx.Done():
			return
		}
	}
}

// answer writes a, then frees its frame's place (done); the last of the
// workers writing at once flushes, so that answers ready together leave
// in one write. A worker writes its own answer: handing it to a writer
// goroutine cost a thread switch per frame. A failed write ends the
// stream.
func (st *streamConn) answer(a wire.StreamAnswer, done func()) {
	defer done()
	st.writers.Add(1)
	st.wmu.Lock()
	defer st.wmu.Unlock()
	err := errStreamFailed
	if !st.failed {
		err = wire.WriteStreamAnswer(st.out, a)
	}
	if st.writers.Add(-1) == 0 && err == nil {
		err = st.out.Flush()
	}
	if err != nil && !st.failed {
		st.failed = true
		st.cancel()
		st.conn.Close() // ends the reader's wait for a frame
	}
}

// errStreamFailed is the error of an answer to a stream whose write
// failed already.
var errStreamFailed = errors.New("request stream: an earlier write failed")

// serveFrameSafely is serveFrame, with a panic of a handler answered 500
// and logged, as net/http does for a request, instead of ending the
// process.
func (st *streamConn) serveFrameSafely(ctx context.Context, f wire.StreamRequest) (a wire.StreamAnswer) {
	defer func() {
		if p := recover(); p != nil {
			st.s.log.Error("panic serving a frame of a request stream", "method", f.Method, "panic", p)
			rec := &frameRecorder{header: http.Header{}}
			writeError(rec, fmt.Errorf("internal error serving %s", f.Method))
			a = rec.answer(f.ID)
		}
	}()
	return st.serveFrame(ctx, f)
}

// serveFrame serves f as the request it stands for, by its route
// (Server.carriedRoute): the handler the router would pick, with the
// token check, admission, forwarding and metrics of a request.
func (st *streamConn) serveFrame(ctx context.Context, f wire.StreamRequest) wire.StreamAnswer {
	rec := &frameRecorder{header: http.Header{}}
	fctx := &frameContext{Context: ctx}
	req, err := http.NewRequestWithContext(fctx, f.Method, f.Target, bytes.NewReader(f.Body))
	if err != nil {
		writeError(rec, badRequest(wire.CodeInvalidQuery, "target", fmt.Sprintf("frame target %q: %v", f.Target, err)))
		return rec.answer(f.ID)
	}
	route, key, ok := st.s.carriedRoute(f.Method, req.URL.EscapedPath())
	if !ok {
		writeError(rec, &apiError{code: wire.CodeNotFound, msg: fmt.Sprintf("the request stream does not carry %s %s", f.Method, f.Target)})
		return rec.answer(f.ID)
	}
	fctx.key, fctx.keyed = key, route.keyed
	req.RequestURI = f.Target
	req.RemoteAddr = st.open.RemoteAddr
	req.TLS = st.open.TLS
	req.Host = st.open.Host
	req.ContentLength = int64(len(f.Body))
	for _, h := range []string{wire.HeaderToken, "Authorization", "User-Agent"} {
		if v := st.open.Header.Values(h); len(v) > 0 {
			req.Header[h] = v
		}
	}
	if len(f.Body) > 0 {
		req.Header["Content-Type"] = jsonContentType
	}
	st.s.serveCarried(rec, req, route)
	return rec.answer(f.ID)
}

// frameKeyVar is the context key of a frame's key variable (pathVar).
type frameKeyVar struct{}

// frameContext is the context of a frame's request: the stream's, with
// the route's key variable, set once the route is found, where pathVar
// finds it. It spares the copy of the request and the map that
// mux.SetURLVars would make for every frame. Embedding the stream's
// context keeps what the context package finds of it (its Done channel
// and cancelation), so contexts derived from it cost no goroutine.
type frameContext struct {
	context.Context
	key   string
	keyed bool
}

func (c *frameContext) Value(k any) any {
	if _, ok := k.(frameKeyVar); ok && c.keyed {
		return c.key
	}
	return c.Context.Value(k)
}

// frameRecorder is the http.ResponseWriter of a frame.
type frameRecorder struct {
	header http.Header
	status int
	body   []byte // most answers are one Write: it takes that slice's size
}

func (r *frameRecorder) Header() http.Header { return r.header }

func (r *frameRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *frameRecorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body = append(r.body, p...)
	return len(p), nil
}

func (r *frameRecorder) answer(id uint32) wire.StreamAnswer {
	return wire.StreamAnswer{ID: id, Status: cmp.Or(r.status, http.StatusOK), Header: r.header, Body: r.body}
}
