package identity

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// File is the name, in the data dir, of the file that says whose the
// data dir is (ADR 0015).
const File = "node-identity.json"

// ErrRefusedStart is wrapped by every error that makes a server refuse to
// start on its data dir: a data dir of another server or cluster, a
// damaged store, lost Raft state. Each error says what to do.
var ErrRefusedStart = errors.New("refusing to start")

// Identity is what the identity file holds: the node id the data dir was
// made for and, once the server has learned it from the replicated state,
// the id of its cluster. A cluster id in the file means the server has been
// a member of that cluster: it has had Raft state (a term, maybe a vote).
type Identity struct {
	NodeID    string `json:"node_id"`
	ClusterID string `json:"cluster_id,omitempty"`
}

// Read reads the identity file of dataDir. found is false, with no
// error, when the file does not exist.
func Read(dataDir string) (id Identity, found bool, err error) {
	path := filepath.Join(dataDir, File)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Identity{}, false, nil
	}
	if err != nil {
		return Identity{}, false, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &id); err != nil {
		return Identity{}, false, fmt.Errorf("%w: %s is not a valid identity file (%w): restore it from a backup, or write {\"node_id\": \"<this server's -node-id>\"} into it if you are sure this data dir is this server's", ErrRefusedStart, path, err)
	}
	if id.NodeID == "" {
		return Identity{}, false, fmt.Errorf("%w: %s names no node_id: restore it from a backup, or write this server's -node-id into it if you are sure this data dir is this server's", ErrRefusedStart, path)
	}
	return id, true, nil
}

// Write replaces the identity file of dataDir atomically: a temp
// file in the same dir, fsynced, renamed over the file, then the dir
// fsynced, so that a crash leaves the old file or the new one, never a
// torn one.
func Write(dataDir string, id Identity) error {
	b, err := json.MarshalIndent(id, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	return WriteFileDurably(filepath.Join(dataDir, File), b, 0o600)
}

// WriteFileDurably writes b to path through a temporary file of the same
// directory, synced, renamed over path, and the directory synced: path is
// the old file or the whole new one, also after a crash.
func WriteFileDurably(path string, b []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return syncDir(dir)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// Claim reads the identity file at start and checks that the data
// dir is nodeID's; a data dir without one (a new one, or one of a build
// that wrote none) is claimed for nodeID.
func Claim(dataDir, nodeID string) (Identity, error) {
	id, found, err := Read(dataDir)
	if err != nil {
		return Identity{}, err
	}
	if !found {
		id = Identity{NodeID: nodeID}
		return id, Write(dataDir, id)
	}
	if id.NodeID != nodeID {
		return Identity{}, fmt.Errorf("%w: data dir %s belongs to server %s (%s), not to %s: a server started on another server's data dir would take over its place in Raft. Start this server with -node-id %s, or give %s a data dir of its own (an empty one for a new server)",
			ErrRefusedStart, dataDir, id.NodeID, File, nodeID, id.NodeID, nodeID)
	}
	return id, nil
}
