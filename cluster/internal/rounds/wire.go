package rounds

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/raft"
)

// The confirmation channel (docs/adr/0002) is a connection to a peer's Raft
// port that starts with Magic instead of one of Raft's RPC types
// (0 to 4), then Version. After that the leader writes requests and
// the voter writes answers, each a frame of its own, pipelined: answers
// come back in order, and every answer names the round it answers.
const (
	Magic   byte = 0xC7 // first byte of a confirmation connection
	Version byte = 1    // second byte: the protocol's version
	// maxServerIDLen bounds the node ids a frame carries.
	maxServerIDLen = 1024
)

// Request asks a voter whether it is still in Term, led by Leader.
type Request struct {
	Round  uint64
	Term   uint64
	Leader raft.ServerID
}

// Answer is a voter's answer to one request: OK only if the voter's
// current term is the request's and it knows of no other leader in it.
// Term is the voter's current term, Voter its node id.
type Answer struct {
	Round uint64
	Term  uint64
	OK    bool
	Voter raft.ServerID
}

func writeRequest(w *bufio.Writer, r Request) error {
	var head [16]byte
	binary.BigEndian.PutUint64(head[0:], r.Round)
	binary.BigEndian.PutUint64(head[8:], r.Term)
	if _, err := w.Write(head[:]); err != nil {
		return err
	}
	return WriteServerID(w, r.Leader)
}

func readRequest(r *bufio.Reader) (Request, error) {
	var head [16]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return Request{}, err
	}
	id, err := ReadServerID(r)
	if err != nil {
		return Request{}, err
	}
	return Request{Round: binary.BigEndian.Uint64(head[0:]), Term: binary.BigEndian.Uint64(head[8:]), Leader: id}, nil
}

func writeAnswer(w *bufio.Writer, a Answer) error {
	var head [17]byte
	binary.BigEndian.PutUint64(head[0:], a.Round)
	binary.BigEndian.PutUint64(head[8:], a.Term)
	if a.OK {
		head[16] = 1
	}
	if _, err := w.Write(head[:]); err != nil {
		return err
	}
	return WriteServerID(w, a.Voter)
}

func readAnswer(r *bufio.Reader) (Answer, error) {
	var head [17]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return Answer{}, err
	}
	if head[16] > 1 {
		return Answer{}, fmt.Errorf("confirmation answer: bad flag %d", head[16])
	}
	id, err := ReadServerID(r)
	if err != nil {
		return Answer{}, err
	}
	return Answer{Round: binary.BigEndian.Uint64(head[0:]), Term: binary.BigEndian.Uint64(head[8:]), OK: head[16] == 1, Voter: id}, nil
}

// WriteServerID writes id as a frame: two bytes of length, then the id.
// The leader-address question on the same port uses it too.
func WriteServerID(w *bufio.Writer, id raft.ServerID) error {
	if len(id) > maxServerIDLen {
		return fmt.Errorf("node id of %d bytes, at most %d", len(id), maxServerIDLen)
	}
	var n [2]byte
	binary.BigEndian.PutUint16(n[:], uint16(len(id)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	_, err := w.WriteString(string(id))
	return err
}

var errLongServerID = errors.New("confirmation frame: node id too long")

// ReadServerID reads a frame that WriteServerID wrote.
func ReadServerID(r *bufio.Reader) (raft.ServerID, error) {
	var n [2]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return "", err
	}
	size := int(binary.BigEndian.Uint16(n[:]))
	if size > maxServerIDLen {
		return "", errLongServerID
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return raft.ServerID(b), nil
}
