package httpapi

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/fsm"
)

// Lists in pages (GET /v1/leases, /v1/groups, a group's keys and plan,
// /v1/acl/tokens) answer at most limit items per request, in key order,
// with the cursor of the next page.
const (
	// DefaultListLimit is the page size of a list request without limit.
	DefaultListLimit = 1000
	// MaxListLimit is the largest limit a list request may ask for.
	MaxListLimit = 10000
)

// parsePage reads the limit and cursor query parameters of a list: limit
// an integer from 1 to MaxListLimit (DefaultListLimit when absent), cursor
// a previous answer's next (absent for the first page).
func parsePage(r *http.Request) (fsm.Page, error) {
	q := r.URL.Query()
	p := fsm.Page{Limit: DefaultListLimit}
	if v, ok := q["limit"]; ok {
		if len(v) != 1 {
			return p, badRequest(wire.CodeInvalidQuery, "limit", "limit: give it once")
		}
		n, err := strconv.Atoi(v[0])
		switch {
		case err != nil || n < 1:
			return p, badRequest(wire.CodeInvalidQuery, "limit", fmt.Sprintf("limit: %q is not an integer from 1 to %d", v[0], MaxListLimit))
		case n > MaxListLimit:
			return p, badRequest(wire.CodeInvalidQuery, "limit", fmt.Sprintf("limit: %d is over the maximum; the maximum is %d", n, MaxListLimit))
		}
		p.Limit = n
	}
	if v, ok := q["cursor"]; ok {
		if len(v) != 1 {
			return p, badRequest(wire.CodeInvalidQuery, "cursor", "cursor: give it once, the next of the previous page")
		}
		after, err := decodeCursor(v[0])
		if err != nil {
			return p, badRequest(wire.CodeInvalidQuery, "cursor", fmt.Sprintf("cursor: %q is not the next of a previous page", v[0]))
		}
		p.After = after
	}
	return p, nil
}

// encodeCursor makes the opaque cursor that continues a listing after key.
// Clients pass it back unchanged; only the server reads it.
func encodeCursor(key string) string {
	if key == "" {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(key))
}

// decodeCursor returns the key a cursor continues after. The cursor names
// a position only: the request's prefix and its ACL check still bound
// what the page lists.
func decodeCursor(c string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", err
	}
	// A position is a key, a group name, a token's accessor id or a
	// worker id (which may be a holder written before the name rule):
	// any short string.
	key := string(b)
	if key == "" || len(key) > 1024 {
		return "", fmt.Errorf("a cursor names 1 to 1024 bytes, this one %d", len(key))
	}
	return key, nil
}

// streamer is an answer that writes itself to the client item by item, so
// that a request holds one page of records and never the whole encoded
// answer.
type streamer interface {
	stream(w io.Writer) error
}

// writeStream answers 200 with s. A client that goes away ends the
// stream; the error is not reported (the status is sent).
func writeStream(w http.ResponseWriter, s streamer) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := streamBuffers.Get().(*bufio.Writer)
	bw.Reset(w)
	if s.stream(bw) == nil {
		bw.Flush()
	}
	bw.Reset(nil) // keep no reference to the answered request
	streamBuffers.Put(bw)
}

// streamBuffers are the write buffers of streamed answers, reused.
var streamBuffers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 32<<10) }}

// listAnswer is one page of a list answer,
// {"<field>":[items…],"index":N,"next":"<cursor>"}, written item by item:
// item(i) makes the i-th item only when it is written.
type listAnswer struct {
	field string
	n     int
	item  func(i int) any
	index uint64
	// after is the key or name the next page starts after; "" after the
	// last page.
	after string
}

func (a listAnswer) stream(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "{%q:[", a.field); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range a.n {
		if i > 0 {
			if _, err := io.WriteString(w, ","); err != nil {
				return err
			}
		}
		if err := enc.Encode(a.item(i)); err != nil {
			return err
		}
	}
	next, err := json.Marshal(encodeCursor(a.after))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "],\"index\":%d,\"next\":%s}\n", a.index, next)
	return err
}
