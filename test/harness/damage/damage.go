// Package damage damages a stopped server's Raft log and stable store the
// way a failing disk or a careless edit would, for the tests that check that tenure notices. It is
// test-only, like package harness, and imports raft and raft-boltdb.
package damage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	bolt "go.etcd.io/bbolt"
)

// FlipInKey flips the lowest bit of the last byte of key's name in the
// last command entry of dataDir/raft.db that holds it ("scene-01" becomes
// "scene-00", still a valid key), and returns that entry's index and the
// file's path. The server must be stopped: bbolt locks the file.
func FlipInKey(dataDir, key string) (index uint64, path string, err error) {
	path = filepath.Join(dataDir, "raft.db")
	store, err := raftboltdb.New(raftboltdb.Options{Path: path})
	if err != nil {
		return 0, path, fmt.Errorf("open %s: %w", path, err)
	}
	defer store.Close()
	first, err := store.FirstIndex()
	if err != nil {
		return 0, path, err
	}
	last, err := store.LastIndex()
	if err != nil {
		return 0, path, err
	}
	for i := last; i >= first && i > 0; i-- {
		var l raft.Log
		if err := store.GetLog(i, &l); err != nil {
			return 0, path, fmt.Errorf("entry %d of %s: %w", i, path, err)
		}
		at := bytes.Index(l.Data, []byte(key))
		if l.Type != raft.LogCommand || at < 0 {
			continue
		}
		l.Data[at+len(key)-1] ^= 0x01
		if err := store.StoreLog(&l); err != nil {
			return 0, path, fmt.Errorf("rewrite entry %d of %s: %w", i, path, err)
		}
		return i, path, nil
	}
	return 0, path, fmt.Errorf("no command entry of %s (%d to %d) holds %q", path, first, last, key)
}

// LowerTerm rewrites, in place, the first 8 bytes (the big-endian number)
// of each of keys of the stable store of dataDir/raft.db ("CurrentTerm",
// "LastVoteTerm") to the number less one, leaving any bytes after them as
// they are, as an edit of the file would; it returns the numbers it found
// and the file's path. The server must be stopped: bbolt locks the file.
func LowerTerm(dataDir string, keys ...string) (was []uint64, path string, err error) {
	path = filepath.Join(dataDir, "raft.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, path, fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		conf := tx.Bucket([]byte("conf"))
		if conf == nil {
			return fmt.Errorf("%s has no stable store", path)
		}
		for _, k := range keys {
			v := bytes.Clone(conf.Get([]byte(k)))
			if len(v) < 8 {
				return fmt.Errorf("%s: %s is %d bytes, want at least 8", path, k, len(v))
			}
			n := binary.BigEndian.Uint64(v)
			if n == 0 {
				return fmt.Errorf("%s: %s is 0", path, k)
			}
			was = append(was, n)
			binary.BigEndian.PutUint64(v, n-1)
			if err := conf.Put([]byte(k), v); err != nil {
				return err
			}
		}
		return nil
	})
	return was, path, err
}
