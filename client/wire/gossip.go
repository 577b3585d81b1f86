package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Member is one gossip member: a server or a worker.
type Member struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
	// Status is alive, suspect, dead or left.
	Status string `json:"status"`
	// Role is server or worker.
	Role string     `json:"role"`
	Meta MemberMeta `json:"meta"`
}

// MemberMeta is what a member announces over gossip, servers and workers
// alike: the servers read it to find each other and to plan a group's keys
// over its workers. Servers and workers (package client/worker) both
// encode and decode this one declaration.
type MemberMeta struct {
	Role string `json:"role"` // "server" or "worker"
	ID   string `json:"id"`
	// Servers.
	RaftAddr        string `json:"raft,omitempty"`
	HTTPAddr        string `json:"http,omitempty"`
	BootstrapExpect int    `json:"expect,omitempty"`
	NonVoter        bool   `json:"nonvoter,omitempty"`
	// Bootstrapped: the server has Raft state (it must not bootstrap again).
	Bootstrapped bool `json:"bootstrapped,omitempty"`
	// ClusterName is the server's -cluster-name: the leader admits only
	// servers of its own cluster to Raft.
	ClusterName string `json:"cluster,omitempty"`
	// Workers. Holder is the holder of the worker's leases (unique per
	// process; several processes may share an ID). With ACLs on, GET
	// /v1/members answers Holder and Groups only to a token with read on
	// every key.
	Holder   string   `json:"holder,omitempty"`
	Groups   []string `json:"groups,omitempty"`
	Capacity int      `json:"capacity,omitempty"`
	// LoadCapacity is the load the worker can carry, in the unit of the
	// load its renewals report (LeaseRef.Load); 0: none announced.
	LoadCapacity float64 `json:"load_capacity,omitempty"`
	// PrepareMS is the longest the worker prepares a key that moves to it
	// (a warm hand-off), in milliseconds, at most MaxPrepare; 0: it does
	// not prepare, and keys move to it at once.
	PrepareMS int64 `json:"prepare_ms,omitempty"`
	Draining  bool  `json:"draining,omitempty"`
	// Keys are the fingerprints of the member's gossip keys, primary
	// first; empty without gossip encryption.
	Keys []string `json:"keys,omitempty"`
}

// KeyFingerprint names a gossip key without revealing it, as members
// announce their keys: the first 8 bytes of its SHA-256, in hex.
func KeyFingerprint(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:8])
}

// KeyFingerprints are the fingerprints of a keyring's keys as a member
// announces them in MemberMeta.Keys: primary first, then the other keys in
// keys (which may hold primary again) in their order.
func KeyFingerprints(primary []byte, keys [][]byte) []string {
	out := []string{KeyFingerprint(primary)}
	for _, k := range keys {
		if !bytes.Equal(k, primary) {
			out = append(out, KeyFingerprint(k))
		}
	}
	return out
}

// Keyring operations: KeyringBody.Op and KeyringMessage.Op.
const (
	KeyringInstall = "install"
	KeyringUse     = "use"
	KeyringRemove  = "remove"
)

// KeyringMessage is a keyring change as a server sends it over gossip to
// every member (servers and workers), after the type byte 'K'.
type KeyringMessage struct {
	Op  string `json:"op"`
	Key string `json:"key"`
}

// PresencePrefix starts the keys of workers that announce themselves with
// a lease instead of gossip (presence leases): a worker with id ID holds
// PresencePrefix+ID, as holder ID#suffix, with its announcement in the
// lease's metadata (PresenceMetadata). While the lease is held the worker
// is a live member of its groups; when it ends, the worker is gone. Any
// HTTP client can be a worker this way (the Python worker is one).
const PresencePrefix = ".workers/"

// The metadata keys of a presence lease: groups (comma-separated),
// capacity, load_capacity, prepare_ms (decimal numbers, as MemberMeta's
// fields) and draining ("true").
const (
	PresenceGroups       = "groups"
	PresenceCapacity     = "capacity"
	PresenceLoadCapacity = "load_capacity"
	PresencePrepareMS    = "prepare_ms"
	PresenceDraining     = "draining"
)

// PresenceMeta reads the announcement of the worker that holds the
// presence lease of key, as holder, with metadata md. It fails when the key
// is not a presence key, the holder is not one of the worker's (ID#…), or
// a field does not parse.
func PresenceMeta(key, holder string, md map[string]string) (MemberMeta, error) {
	id, ok := strings.CutPrefix(key, PresencePrefix)
	if !ok || id == "" || strings.Contains(id, "/") {
		return MemberMeta{}, fmt.Errorf("key %q is not %s<worker id>", key, PresencePrefix)
	}
	if WorkerOf(holder) != id || !strings.Contains(holder, "#") {
		return MemberMeta{}, fmt.Errorf("holder %q of %s is not %s#<suffix>", holder, key, id)
	}
	m := MemberMeta{Role: "worker", ID: id, Holder: holder, Draining: md[PresenceDraining] == "true"}
	for _, g := range strings.Split(md[PresenceGroups], ",") {
		if g = strings.TrimSpace(g); g != "" {
			m.Groups = append(m.Groups, g)
		}
	}
	var err error
	if s := md[PresenceCapacity]; s != "" {
		if m.Capacity, err = strconv.Atoi(s); err != nil || m.Capacity < 0 {
			return MemberMeta{}, fmt.Errorf("%s of %s: %q is not a count", PresenceCapacity, key, s)
		}
	}
	if s := md[PresenceLoadCapacity]; s != "" {
		if m.LoadCapacity, err = strconv.ParseFloat(s, 64); err != nil || LoadProblem(m.LoadCapacity) != "" {
			return MemberMeta{}, fmt.Errorf("%s of %s: %q is not a load from 0 to %g", PresenceLoadCapacity, key, s, float64(MaxLoad))
		}
	}
	if s := md[PresencePrepareMS]; s != "" {
		if m.PrepareMS, err = strconv.ParseInt(s, 10, 64); err != nil || m.PrepareMS < 0 {
			return MemberMeta{}, fmt.Errorf("%s of %s: %q is not a number of milliseconds", PresencePrepareMS, key, s)
		}
	}
	return m, nil
}
