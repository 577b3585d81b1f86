package identity

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
)

func TestIdentityWriteRead(t *testing.T) {
	dir := t.TempDir()
	if _, found, err := Read(dir); found || err != nil {
		t.Fatalf("Read of an empty dir = found %v, %v; want not found, no error", found, err)
	}
	want := Identity{NodeID: "s1", ClusterID: "c-1"}
	if err := Write(dir, want); err != nil {
		t.Fatal(err)
	}
	got, found, err := Read(dir)
	if err != nil || !found || got != want {
		t.Fatalf("Read = %+v, %v, %v; want %+v", got, found, err, want)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != File {
		t.Errorf("data dir holds %v, want only %s (no temp file left)", entries, File)
	}
}

// A reader never sees a torn identity file: every read while the file is
// rewritten finds the old identity or the new one.
func TestIdentityWriteIsAtomic(t *testing.T) {
	dir := t.TempDir()
	ids := []Identity{{NodeID: "s1"}, {NodeID: "s1", ClusterID: strings.Repeat("c", 4096)}}
	if err := Write(dir, ids[0]); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var torn error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			got, found, err := Read(dir)
			if err != nil || !found || (got != ids[0] && got != ids[1]) {
				torn = errors.New("read a torn identity file")
				if err != nil {
					torn = err
				}
				return
			}
		}
	}()
	for i := 0; i < 200 && torn == nil; i++ {
		if err := Write(dir, ids[i%2]); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if torn != nil {
		t.Fatalf("concurrent read: %v", torn)
	}
}

// A data dir is claimed by the first server started on it, and refused to
// any other.
func TestClaim(t *testing.T) {
	for _, tc := range []struct {
		name    string
		file    *Identity // nil: no identity file
		nodeID  string
		want    Identity
		refused bool
	}{
		{"a new data dir", nil, "s1", Identity{NodeID: "s1"}, false},
		{"its own", &Identity{NodeID: "s1", ClusterID: "c-1"}, "s1", Identity{NodeID: "s1", ClusterID: "c-1"}, false},
		{"another server's", &Identity{NodeID: "s2"}, "s1", Identity{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.file != nil {
				if err := Write(dir, *tc.file); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Claim(dir, tc.nodeID)
			if tc.refused {
				if !errors.Is(err, ErrRefusedStart) {
					t.Fatalf("Claim = %+v, %v; want ErrRefusedStart", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Claim = %+v, %v; want %+v", got, err, tc.want)
			}
			if onDisk, found, err := Read(dir); err != nil || !found || onDisk != tc.want {
				t.Fatalf("the file holds %+v (found %v, %v), want %+v", onDisk, found, err, tc.want)
			}
		})
	}
}
