// Package damage damages a stopped server's Raft log the way a failing
// disk would, for the tests that check that tenure notices. It is
// test-only, like package harness, and imports raft and raft-boltdb.
package damage

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
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
