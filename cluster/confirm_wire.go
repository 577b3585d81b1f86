package cluster

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/raft"
)

// The confirmation channel (docs/adr/0002) is a connection to a peer's Raft
// port that starts with confirmMagic instead of one of Raft's RPC types
// (0 to 4), then confirmVersion. After that the leader writes requests and
// the voter writes answers, each a frame of its own, pipelined: answers
// come back in order, and every answer names the round it answers.
const (
	confirmMagic   byte = 0xC7
	confirmVersion byte = 1
	// maxServerIDLen bounds the node ids a frame carries.
	maxServerIDLen = 1024
)

// confirmRequest asks a voter whether it is still in Term, led by Leader.
type confirmRequest struct {
	Round  uint64
	Term   uint64
	Leader raft.ServerID
}

// confirmAnswer is a voter's answer to one request: OK only if the voter's
// current term is the request's and it knows of no other leader in it.
// Term is the voter's current term, Voter its node id.
type confirmAnswer struct {
	Round uint64
	Term  uint64
	OK    bool
	Voter raft.ServerID
}

func writeConfirmRequest(w *bufio.Writer, r confirmRequest) error {
	var head [16]byte
	binary.BigEndian.PutUint64(head[0:], r.Round)
	binary.BigEndian.PutUint64(head[8:], r.Term)
	if _, err := w.Write(head[:]); err != nil {
		return err
	}
	return writeServerID(w, r.Leader)
}

func readConfirmRequest(r *bufio.Reader) (confirmRequest, error) {
	var head [16]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return confirmRequest{}, err
	}
	id, err := readServerID(r)
	if err != nil {
		return confirmRequest{}, err
	}
	return confirmRequest{Round: binary.BigEndian.Uint64(head[0:]), Term: binary.BigEndian.Uint64(head[8:]), Leader: id}, nil
}

func writeConfirmAnswer(w *bufio.Writer, a confirmAnswer) error {
	var head [17]byte
	binary.BigEndian.PutUint64(head[0:], a.Round)
	binary.BigEndian.PutUint64(head[8:], a.Term)
	if a.OK {
		head[16] = 1
	}
	if _, err := w.Write(head[:]); err != nil {
		return err
	}
	return writeServerID(w, a.Voter)
}

func readConfirmAnswer(r *bufio.Reader) (confirmAnswer, error) {
	var head [17]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return confirmAnswer{}, err
	}
	if head[16] > 1 {
		return confirmAnswer{}, fmt.Errorf("confirmation answer: bad flag %d", head[16])
	}
	id, err := readServerID(r)
	if err != nil {
		return confirmAnswer{}, err
	}
	return confirmAnswer{Round: binary.BigEndian.Uint64(head[0:]), Term: binary.BigEndian.Uint64(head[8:]), OK: head[16] == 1, Voter: id}, nil
}

func writeServerID(w *bufio.Writer, id raft.ServerID) error {
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

func readServerID(r *bufio.Reader) (raft.ServerID, error) {
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
