package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// The request stream (docs/http-api.md, "The request stream"): a client
// opens it with GET StreamPath and the headers Connection: Upgrade and
// Upgrade: StreamProtocol; the server answers 101 Switching Protocols and
// the connection then carries requests and answers as frames, several at
// a time, each answer naming its request's ID. A frame is the HTTP
// request or answer it stands for, without the parts that are the same
// for every frame of a stream (the token, the client's address).
const (
	StreamPath     = "/v1/stream"
	StreamProtocol = "tenure-stream/1"
	// MaxStreamFrame bounds a frame's length: the largest body a request
	// may have (a bulk renewal's 512 KiB) and room for the rest.
	MaxStreamFrame = 512<<10 + 8<<10
	// MaxStreamInFlight is how many requests of one stream a server works
	// on at once; it reads no more frames of that stream until one is
	// answered.
	MaxStreamInFlight = 128
	// MaxStreamBytesInWork bounds the bytes of the request frames of one
	// stream that a server holds at once, read and not yet answered: a
	// frame waits until the frames before it leave room (one larger than
	// the bound waits until it is alone).
	MaxStreamBytesInWork = 1 << 20
)

// StreamHeaders are the answer headers a stream frame carries: those a
// client reads from the answers of the calls a stream carries.
var StreamHeaders = []string{"Content-Type", "Retry-After", HeaderLeaderAddr, HeaderIndex, HeaderLastContact, HeaderKnownLeader,
	HeaderRelease, HeaderAppliedIndex, HeaderBehind, HeaderNotReady}

// StreamCarries reports whether a stream carries the call method target
// (a path from "/v1/", with its query): the calls of one lease (acquire,
// release, renew and read it) and bulk renewals. Every other call, and a
// call that may wait on purpose (a blocking acquire or read), goes as a
// request of its own.
func StreamCarries(method, target string) bool {
	path, _, _ := strings.Cut(target, "?")
	switch {
	case method == http.MethodPost && path == "/v1/renew":
		return true
	case method == http.MethodPost && strings.HasPrefix(path, "/v1/renew/"):
		return len(path) > len("/v1/renew/")
	case strings.HasPrefix(path, "/v1/leases/") && len(path) > len("/v1/leases/"):
		return method == http.MethodPut || method == http.MethodDelete || method == http.MethodGet
	}
	return false
}

// TimedWriter gives each write to Conn a deadline of Timeout from its
// start. A bufio.Writer over it bounds every write it makes, those of
// Flush and those a frame larger than its buffer makes on its own; a
// deadline set once before Flush would leave the latter to the deadline
// of an earlier Flush, past already on a busy stream.
type TimedWriter struct {
	Conn    net.Conn
	Timeout time.Duration
}

func (w TimedWriter) Write(p []byte) (int, error) {
	w.Conn.SetWriteDeadline(time.Now().Add(w.Timeout))
	return w.Conn.Write(p)
}

// StreamRequest is a request frame.
type StreamRequest struct {
	ID     uint32
	Method string
	Target string // the escaped path, from "/v1/", and its query
	Body   []byte
}

// StreamAnswer is an answer frame.
type StreamAnswer struct {
	ID     uint32
	Status int
	Header http.Header // only StreamHeaders
	Body   []byte
}

// ErrStreamFrame is the error of a frame that breaks the frame rules.
var ErrStreamFrame = errors.New("bad stream frame")

// A frame is its length (4 bytes, big-endian, of what follows), the ID (4
// bytes), then for a request the method (1 byte of length, the bytes) and
// the target (2 bytes of length, the bytes), for an answer the status (2
// bytes) and the headers (1 byte of count, then for each its name as 1
// byte of length and the bytes, its value as 2 bytes of length and the
// bytes); the body is the rest.

// WriteStreamRequest writes f to w (not flushed).
func WriteStreamRequest(w *bufio.Writer, f StreamRequest) error {
	if len(f.Method) > 255 || len(f.Target) > 65535 {
		return fmt.Errorf("%w: method or target too long", ErrStreamFrame)
	}
	n := 4 + 1 + len(f.Method) + 2 + len(f.Target) + len(f.Body)
	if n > MaxStreamFrame {
		return fmt.Errorf("%w: request of %d bytes exceeds %d", ErrStreamFrame, n, MaxStreamFrame)
	}
	var b [8]byte
	binary.BigEndian.PutUint32(b[:4], uint32(n))
	binary.BigEndian.PutUint32(b[4:], f.ID)
	w.Write(b[:])
	w.WriteByte(byte(len(f.Method)))
	w.WriteString(f.Method)
	w.Write(binary.BigEndian.AppendUint16(b[:0], uint16(len(f.Target))))
	w.WriteString(f.Target)
	_, err := w.Write(f.Body)
	return err
}

// WriteStreamAnswer writes f to w (not flushed); headers not in
// StreamHeaders are left out, and so are values over 65,535 bytes.
func WriteStreamAnswer(w *bufio.Writer, f StreamAnswer) error {
	// The names of StreamHeaders are in canonical form
	// (TestStreamHeadersAreCanonical): the map is read without
	// canonicalizing them again, and sized before it is written.
	count, size := 0, 0
	for _, name := range StreamHeaders {
		if v := first(f.Header[name]); v != "" && len(v) <= 65535 {
			count++
			size += 1 + len(name) + 2 + len(v)
		}
	}
	n := 4 + 2 + 1 + size + len(f.Body)
	if n > MaxStreamFrame {
		return fmt.Errorf("%w: answer of %d bytes exceeds %d", ErrStreamFrame, n, MaxStreamFrame)
	}
	var b [11]byte
	binary.BigEndian.PutUint32(b[:4], uint32(n))
	binary.BigEndian.PutUint32(b[4:8], f.ID)
	binary.BigEndian.PutUint16(b[8:10], uint16(f.Status))
	b[10] = byte(count)
	w.Write(b[:])
	for _, name := range StreamHeaders {
		if v := first(f.Header[name]); v != "" && len(v) <= 65535 {
			w.WriteByte(byte(len(name)))
			w.WriteString(name)
			w.Write(binary.BigEndian.AppendUint16(b[:0], uint16(len(v))))
			w.WriteString(v)
		}
	}
	_, err := w.Write(f.Body)
	return err
}

// first is a header's first value, as http.Header.Get gives it.
func first(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

// readFrame reads one frame's ID and the bytes after it.
func readFrame(r *bufio.Reader) (uint32, []byte, error) {
	var b [8]byte
	if _, err := io.ReadFull(r, b[:4]); err != nil {
		return 0, nil, err // io.EOF between frames: the stream ended
	}
	n := binary.BigEndian.Uint32(b[:4])
	if n < 4 || n > MaxStreamFrame {
		return 0, nil, fmt.Errorf("%w: length %d is not between 4 and %d", ErrStreamFrame, n, MaxStreamFrame)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrStreamFrame, unexpected(err))
	}
	return binary.BigEndian.Uint32(buf[:4]), buf[4:], nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// field takes a field of size bytes of length from the front of p.
func field(p []byte, size int) (string, []byte, bool) {
	if len(p) < size {
		return "", nil, false
	}
	n := int(p[0])
	if size == 2 {
		n = int(binary.BigEndian.Uint16(p))
	}
	p = p[size:]
	if len(p) < n {
		return "", nil, false
	}
	return string(p[:n]), p[n:], true
}

// ReadStreamRequest reads one request frame. At the end of the stream
// between frames it returns io.EOF; a frame that breaks the rules is an
// error matching ErrStreamFrame.
func ReadStreamRequest(r *bufio.Reader) (StreamRequest, error) {
	id, p, err := readFrame(r)
	if err != nil {
		return StreamRequest{}, err
	}
	f := StreamRequest{ID: id}
	var ok bool
	if f.Method, p, ok = field(p, 1); ok {
		f.Target, p, ok = field(p, 2)
	}
	if !ok {
		return StreamRequest{}, fmt.Errorf("%w: request %d is cut short", ErrStreamFrame, id)
	}
	f.Body = p
	return f, nil
}

// ReadStreamAnswer reads one answer frame, as ReadStreamRequest does.
func ReadStreamAnswer(r *bufio.Reader) (StreamAnswer, error) {
	id, p, err := readFrame(r)
	if err != nil {
		return StreamAnswer{}, err
	}
	if len(p) < 3 {
		return StreamAnswer{}, fmt.Errorf("%w: answer %d is cut short", ErrStreamFrame, id)
	}
	f := StreamAnswer{ID: id, Status: int(binary.BigEndian.Uint16(p)), Header: http.Header{}}
	count := int(p[2])
	p = p[3:]
	for range count {
		name, rest, ok := field(p, 1)
		if !ok {
			return StreamAnswer{}, fmt.Errorf("%w: answer %d is cut short", ErrStreamFrame, id)
		}
		var v string
		if v, p, ok = field(rest, 2); !ok {
			return StreamAnswer{}, fmt.Errorf("%w: answer %d is cut short", ErrStreamFrame, id)
		}
		f.Header.Set(name, v)
	}
	f.Body = p
	return f, nil
}
