package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/test/jepsen/history"
)

// Wire types of the store's HTTP API.
type (
	// regValue is the answer of a read and of an accepted write.
	regValue struct {
		Value int64  `json:"value"`
		Token uint64 `json:"token"` // the highest token seen for the key
	}
	// regWrite is the body of a write.
	regWrite struct {
		Writer string `json:"writer"`
		Token  uint64 `json:"token"`
		Base   int64  `json:"base"`
		Value  int64  `json:"value"`
	}
	// storeError is the body of every error answer. Highest is set on
	// stale_token only.
	storeError struct {
		Error   string `json:"error"`
		Message string `json:"message,omitempty"`
		Highest uint64 `json:"highest,omitempty"`
	}
)

const (
	regPrefix       = "/v1/reg/"
	maxStoreBody    = 64 << 10
	maxStoreKey     = 256
	codeStaleToken  = "stale_token"
	codeHistoryFail = "history"
)

// register is the state of one key.
type register struct {
	value   int64
	highest uint64
}

// store is the fenced register: an int64 per key, and the highest fencing
// token it has seen for the key. With fence set, a write whose token is
// below that highest token is refused; without it every write is accepted
// (the negative control).
//
// Every request is served under one mutex, and its event is written to the
// history while the mutex is held, before the state changes: the order of
// the file is the order in which the requests were applied, and a request
// whose event could not be written changes nothing (it answers 500).
type store struct {
	fence bool
	rec   *recorder
	log   hclog.Logger

	mu   sync.Mutex
	regs map[string]*register
}

func newStore(fence bool, rec *recorder, log hclog.Logger) *store {
	return &store{fence: fence, rec: rec, log: log, regs: make(map[string]*register)}
}

// handler returns the store's routes: GET /healthz, and GET and POST of
// /v1/reg/{key}. A key may contain slashes; it must not be empty.
func (s *store) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			writeJSON(w, http.StatusMethodNotAllowed, storeError{Error: "method_not_allowed"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "fencing": s.fence})
	})
	mux.HandleFunc(regPrefix, s.serveReg)
	return mux
}

func (s *store) serveReg(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.URL.Path, regPrefix)
	if key == "" || len(key) > maxStoreKey {
		writeJSON(w, http.StatusBadRequest, storeError{Error: "invalid_key", Message: fmt.Sprintf("the key must be 1 to %d bytes", maxStoreKey)})
		return
	}
	switch r.Method {
	case http.MethodGet:
		s.read(w, r, key)
	case http.MethodPost:
		s.write(w, r, key)
	default:
		w.Header().Set("Allow", "GET, POST")
		writeJSON(w, http.StatusMethodNotAllowed, storeError{Error: "method_not_allowed"})
	}
}

// read answers the key's value and highest token, and records a
// StoreRead by the writer named in the query. A read that names a token
// is fenced like a write: a token below the highest is refused, and a
// higher one becomes the highest, so a holder that read under a new token
// shuts out every older one before it writes (otherwise an older holder's
// write could land between the new holder's read and its write).
func (s *store) read(w http.ResponseWriter, r *http.Request, key string) {
	q := r.URL.Query()
	writer := q.Get("writer")
	if writer == "" {
		writeJSON(w, http.StatusBadRequest, storeError{Error: "invalid_writer", Message: "the writer query parameter is required"})
		return
	}
	var token uint64
	if t := q.Get("token"); t != "" {
		var err error
		if token, err = strconv.ParseUint(t, 10, 64); err != nil {
			writeJSON(w, http.StatusBadRequest, storeError{Error: "invalid_token", Message: "token: want an unsigned integer"})
			return
		}
	}
	s.mu.Lock()
	reg, accepted := s.admit(key, token)
	err := s.rec.Write(history.Event{Kind: history.StoreRead, Proc: writer, Key: key, Value: reg.value, Token: token, Accepted: accepted})
	if err == nil && accepted {
		reg.highest = max(reg.highest, token)
	}
	cur := *reg
	s.mu.Unlock()
	answer(w, key, token, cur, accepted, err)
}

// write applies a fenced write and records a StoreWrite, accepted or not.
func (s *store) write(w http.ResponseWriter, r *http.Request, key string) {
	req, err := decodeWrite(http.MaxBytesReader(w, r.Body, maxStoreBody))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, storeError{Error: "invalid_body", Message: err.Error()})
		return
	}
	s.mu.Lock()
	reg, accepted := s.admit(key, req.Token)
	err = s.rec.Write(history.Event{
		Kind: history.StoreWrite, Proc: req.Writer, Key: key, Token: req.Token,
		Base: req.Base, Value: req.Value, Current: reg.value, Accepted: accepted,
	})
	if err == nil && accepted {
		reg.value = req.Value
		reg.highest = max(reg.highest, req.Token)
	}
	cur := *reg
	s.mu.Unlock()
	answer(w, key, req.Token, cur, accepted, err)
}

// admit returns key's register, made if new, and whether a request under
// token passes the fence: without fencing, or without a token (a read
// that names none; writes must), every request does. s.mu is held.
func (s *store) admit(key string, token uint64) (*register, bool) {
	reg := s.regs[key]
	if reg == nil {
		reg = &register{}
		s.regs[key] = reg
	}
	return reg, !s.fence || token == 0 || token >= reg.highest
}

// answer replies to a read or a write under token: 500 when its event
// could not be recorded (nothing changed), 409 when the token was stale,
// else the key's value and highest token after the request.
func answer(w http.ResponseWriter, key string, token uint64, cur register, accepted bool, err error) {
	switch {
	case err != nil:
		writeJSON(w, http.StatusInternalServerError, storeError{Error: codeHistoryFail, Message: err.Error()})
	case !accepted:
		writeJSON(w, http.StatusConflict, storeError{Error: codeStaleToken,
			Message: fmt.Sprintf("token %d is below the highest token %d of %q", token, cur.highest, key), Highest: cur.highest})
	default:
		writeJSON(w, http.StatusOK, regValue{Value: cur.value, Token: cur.highest})
	}
}

// decodeWrite reads a write body: one JSON object with known fields only,
// a writer, and a token other than 0.
func decodeWrite(body io.Reader) (regWrite, error) {
	var req regWrite
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return regWrite{}, fmt.Errorf("decode the body: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return regWrite{}, errors.New("decode the body: trailing data after the JSON object")
	}
	if req.Writer == "" {
		return regWrite{}, errors.New("writer is required")
	}
	if req.Token == 0 {
		return regWrite{}, errors.New("token must not be 0")
	}
	return req, nil
}

// writeJSON answers status with v as its JSON body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // a client that went away is not our problem
}
