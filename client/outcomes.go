package client

import (
	"errors"
	"fmt"
	"strings"
)

// outcomes remembers what each address answered during one call, so that
// a call that gives up reports the most telling answer of all the servers
// it tried, not merely the last: with two servers of three down, the
// survivor's no_leader says more than the refused connection of whichever
// server was tried last.
type outcomes struct {
	order []string         // addresses in the order first tried
	last  map[string]error // the latest failure of each
}

func (o *outcomes) note(addr string, err error) {
	if o.last == nil {
		o.last = make(map[string]error, 3)
	}
	if _, seen := o.last[addr]; !seen {
		o.order = append(o.order, addr)
	}
	o.last[addr] = err
}

// explain returns the error of a call that gives up after its last
// attempt, to addr, ended in err: the most telling failure (a server's
// answer rather than a connection that failed), naming its server, and
// after it what the other servers did. It wraps the most telling failure,
// so errors.Is and errors.As see it.
func (o *outcomes) explain(addr string, err error) error {
	best, bestAddr := err, addr
	if !isAnswer(err) {
		for _, a := range o.order {
			if isAnswer(o.last[a]) {
				best, bestAddr = o.last[a], a
				break
			}
		}
	}
	var others []string
	for _, a := range o.order {
		if a != bestAddr {
			others = append(others, fmt.Sprintf("%s: %v", a, o.last[a]))
		}
	}
	if isAnswer(best) {
		best = &fromError{addr: bestAddr, err: best}
	}
	if len(others) == 0 {
		return best
	}
	return &triedError{best: best, others: others}
}

// isAnswer reports whether err is a server's answer, not a failure to get
// one.
func isAnswer(err error) bool {
	var ae *APIError
	return errors.As(err, &ae)
}

// fromError names the server that answered err.
type fromError struct {
	addr string
	err  error
}

func (e *fromError) Error() string { return e.addr + " answered: " + e.err.Error() }
func (e *fromError) Unwrap() error { return e.err }

// triedError is the most telling failure of a call, with what the other
// servers tried did.
type triedError struct {
	best   error
	others []string
}

func (e *triedError) Error() string {
	return e.best.Error() + "; also tried " + strings.Join(e.others, "; ")
}

func (e *triedError) Unwrap() error { return e.best }
