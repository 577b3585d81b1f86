package main

import (
	"archive/tar"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/tenure-io/tenure/client"
)

// debugPart is one file of a `tenure debug` archive and how to read it.
type debugPart struct {
	file string
	read func(ctx context.Context, d *client.NodeDebugAPI) ([]byte, error)
}

// debugParts are the files of the archive, besides index.json.
var debugParts = []debugPart{
	{"status.json", func(ctx context.Context, d *client.NodeDebugAPI) ([]byte, error) { return d.Status(ctx) }},
	{"members.json", func(ctx context.Context, d *client.NodeDebugAPI) ([]byte, error) { return d.Members(ctx) }},
	{"metrics.txt", func(ctx context.Context, d *client.NodeDebugAPI) ([]byte, error) { return d.Metrics(ctx) }},
	{"goroutine.pprof", func(ctx context.Context, d *client.NodeDebugAPI) ([]byte, error) { return d.Profile(ctx, "goroutine") }},
	{"heap.pprof", func(ctx context.Context, d *client.NodeDebugAPI) ([]byte, error) { return d.Profile(ctx, "heap") }},
	{"logs.txt", func(ctx context.Context, d *client.NodeDebugAPI) ([]byte, error) { return d.Logs(ctx) }},
}

// debugIndex is index.json of the archive: what was collected, from whom.
type debugIndex struct {
	NodeID      string            `json:"node_id"`
	Address     string            `json:"address"`
	CollectedAt time.Time         `json:"collected_at"`
	CLIVersion  string            `json:"cli_version"`
	Files       []string          `json:"files"`
	Errors      map[string]string `json:"errors,omitempty"`
	Output      string            `json:"output"`
}

// debug collects, from one server over its HTTP API, what a bug report
// needs into one .tar.gz: status, members, metrics, goroutine and heap
// profiles, and its last log lines. A part the server cannot give is an
// <file>.error in the archive; a refused token ends the command.
func (e *env) debug(ctx context.Context, args []string) int {
	var output string
	fs, cf := e.clusterFlagSet("debug", "debug [-http-addr A] [-output FILE.tar.gz] [-token T] [-ca-file F -client-cert F -client-key F]")
	fs.StringVar(&output, "output", "", "archive to write (default tenure-debug-<node id>-<UTC time>.tar.gz in the current directory); never overwritten")
	return e.answer(fs, cf, args, 0, 0, func(c *client.Client, _ []string) (any, func(), error) {
		d := c.NodeDebug()
		idx := debugIndex{Address: d.Address(), CollectedAt: time.Now().UTC(), CLIVersion: version + " " + runtime.Version(), Errors: map[string]string{}}
		files := map[string][]byte{}
		for _, p := range debugParts {
			b, err := p.read(ctx, d)
			if err != nil {
				if ctx.Err() != nil {
					return nil, nil, ctx.Err()
				}
				if errors.Is(err, client.ErrPermissionDenied) || errors.Is(err, client.ErrACLNotFound) {
					return nil, nil, fmt.Errorf("%s: %s refused the request: %w; tenure debug needs an ACL token with the debug right (-token, or $%s)",
						p.file, d.Address(), err, client.EnvHTTPToken)
				}
				if p.file == "status.json" {
					// Nothing else would come from a server that does not
					// answer its status.
					return nil, nil, fmt.Errorf("status of %s: %w", d.Address(), err)
				}
				idx.Errors[p.file] = err.Error()
				files[p.file+".error"] = []byte(err.Error() + "\n")
				idx.Files = append(idx.Files, p.file+".error")
				continue
			}
			if p.file == "status.json" {
				var st client.NodeStatus
				if err := json.Unmarshal(b, &st); err != nil {
					return nil, nil, fmt.Errorf("status of %s: %w", d.Address(), err)
				}
				idx.NodeID = st.NodeID
			}
			files[p.file] = b
			idx.Files = append(idx.Files, p.file)
		}
		stamp := idx.CollectedAt.Format("20060102T150405Z")
		dir := "tenure-debug-" + fileSafe(idx.NodeID) + "-" + stamp
		output = cmp.Or(output, dir+".tar.gz")
		idx.Output = output
		index, err := json.MarshalIndent(idx, "", "  ")
		if err != nil {
			return nil, nil, err
		}
		if err := writeDebugArchive(output, dir, append([]string{"index.json"}, idx.Files...), func(name string) []byte {
			if name == "index.json" {
				return append(index, '\n')
			}
			return files[name]
		}); err != nil {
			return nil, nil, fmt.Errorf("output: %w", err)
		}
		return idx, func() {
			fmt.Fprintf(e.stdout, "wrote %s: node %s at %s, %d files", output, idx.NodeID, idx.Address, len(idx.Files)+1)
			if len(idx.Errors) > 0 {
				fmt.Fprintf(e.stdout, ", %d parts missing:", len(idx.Errors))
				for _, p := range debugParts {
					if msg, ok := idx.Errors[p.file]; ok {
						fmt.Fprintf(e.stdout, "\n  %s: %s", p.file, msg)
					}
				}
			}
			fmt.Fprintln(e.stdout)
		}, nil
	})
}

// fileSafe makes s fit in a file name: characters other than letters,
// digits, '.', '-' and '_' become '_'.
func fileSafe(s string) string {
	if s == "" {
		return "unknown"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}

// writeDebugArchive writes the files, in order, under dir in a new gzipped
// tar at path (mode 0600: logs and metrics may say more than the cluster
// shows to everyone). It never replaces an existing file, and removes what
// it wrote on failure.
func writeDebugArchive(path, dir string, names []string, content func(string) []byte) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	now := time.Now()
	for _, name := range names {
		b := content(name)
		hdr := &tar.Header{Name: dir + "/" + name, Mode: 0o600, Size: int64(len(b)), ModTime: now, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}
