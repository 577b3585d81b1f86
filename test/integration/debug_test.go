package integration

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	pb "encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/test/harness"
)

// jsonLogLines parses the lines of a server started with -log-format
// json; a line that is not a JSON object is an error of the test.
func jsonLogLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Errorf("with -log-format json, a log line is not JSON: %q (%v)", sc.Text(), err)
			continue
		}
		lines = append(lines, m)
	}
	return lines
}

// A server run with -log-format json writes JSON lines only, and the
// leader logs a lease's expiry as lease_expired at info with the key,
// holder and token of the lease and the term of the entry that expired
// it (as GET /v1/events reports it).
func TestServerLogsLeaseExpiryAsJSON(t *testing.T) {
	d := startDev(t, "-log-format", "json", "-min-ttl", "500ms")
	cfg := client.DefaultConfig()
	cfg.Addresses, cfg.Holder = []string{d.httpAddr}, "json-log-test"
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, _, err := c.Leases().Acquire(ctx, "logs/k", client.AcquireRequest{Holder: "json-log-test", TTL: 500 * time.Millisecond})
	if err != nil {
		t.Fatalf("acquire: %v\n%s", err, d.logs.String())
	}
	var expired client.Event
	poll.WaitFor(t, 15*time.Second, func() error {
		events, _, err := c.Events().List(ctx, client.EventFilter{Prefix: "logs/k", Types: []string{"expired"}})
		if err != nil {
			return err
		}
		if len(events) == 0 {
			return fmt.Errorf("no expired event for logs/k yet")
		}
		expired = events[0]
		return nil
	})
	var line map[string]any
	poll.WaitFor(t, 5*time.Second, func() error {
		for _, m := range jsonLogLines(t, d.logs.String()) {
			if m["@message"] == "lease_expired" && m["key"] == "logs/k" {
				line = m
				return nil
			}
		}
		return fmt.Errorf("no lease_expired line for logs/k in the log")
	})
	want := map[string]any{"@level": "info", "holder": "json-log-test", "token": float64(l.Token), "term": float64(expired.Term), "index": float64(expired.Index)}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("lease_expired %s = %v, want %v (line %v)", k, line[k], v, line)
		}
	}
	if expired.Term == 0 {
		t.Errorf("the expired event has term 0: %+v", expired)
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.exited:
		if err != nil {
			t.Errorf("server exited with %v after SIGTERM", err)
		}
	case <-time.After(stopTimeout):
		t.Fatalf("server did not exit within %v of SIGTERM", stopTimeout)
	}
	jsonLogLines(t, d.logs.String()) // the last lines too
}

// readArchive returns the files of a .tar.gz by their base names.
func readArchive(t *testing.T, path string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for name, b := range harness.ReadTarGz(t, path) {
		files[filepath.Base(name)] = b
	}
	return files
}

// `tenure debug` against a server with mutual TLS and ACLs: with a token
// that has only the debug right it writes one archive with every part,
// non-empty; the
// goroutine profile is a gzipped pprof protocol buffer, the logs hold the
// server's recent lines; without a token it fails saying so, and writes
// nothing.
func TestDebugArchiveWithTLSAndACLs(t *testing.T) {
	d, tc, boot := startSecureDev(t, "admin")
	addr := "https://" + d.httpAddr
	c := tokenClient(t, "debug-test", boot.SecretID, tc, 0, addr)
	d.use(t, c) // a recent request, logged as acl_request
	// A token with only the debug right collects every part.
	ctx := harness.Context(t, 30*time.Second)
	bugs := policyToken(t, ctx, c, "bugs", "", []client.ACLRule{{Prefix: "", Rights: []string{client.RightDebug}}})

	tlsArgs := []string{"-http-addr", addr, "-ca-file", tc.CAFile, "-client-cert", tc.CertFile, "-client-key", tc.KeyFile}
	dir := t.TempDir()
	out := filepath.Join(dir, "bundle.tar.gz")
	r := runTenure(t, nil, append([]string{"debug", "-token", bugs.SecretID, "-output", out}, tlsArgs...)...)
	if r.code != 0 {
		t.Fatalf("tenure debug: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, out) || !strings.Contains(r.stdout, "node dev") {
		t.Errorf("tenure debug said %q; want the archive and the node named", r.stdout)
	}
	files := readArchive(t, out)
	for _, name := range []string{"index.json", "status.json", "members.json", "metrics.txt", "goroutine.pprof", "heap.pprof", "logs.txt"} {
		if len(files[name]) == 0 {
			t.Errorf("archive: %s missing or empty (files: %v)", name, fileNames(files))
		}
		if e, ok := files[name+".error"]; ok {
			t.Errorf("archive: %s could not be collected: %s", name, e)
		}
	}
	var st client.NodeStatus
	if err := json.Unmarshal(files["status.json"], &st); err != nil || st.NodeID != "dev" {
		t.Errorf("status.json = %+v, %v; want node dev", st, err)
	}
	if !bytes.Contains(files["metrics.txt"], []byte("tenure_acquisitions_total")) {
		t.Errorf("metrics.txt lacks tenure_acquisitions_total")
	}
	for prof, sampleType := range map[string]string{"goroutine.pprof": "goroutine", "heap.pprof": "inuse_space"} {
		if err := checkPprof(files[prof], sampleType); err != nil {
			t.Errorf("%s: %v", prof, err)
		}
	}
	logs := string(files["logs.txt"])
	if !strings.Contains(logs, "tenure server started") || !strings.Contains(logs, "/v1/leases/dev/k") {
		t.Errorf("logs.txt lacks the start line or the recent acquire of dev/k:\n%s", logs)
	}

	// Without a token: a clear failure, and no archive.
	none := filepath.Join(dir, "none.tar.gz")
	r = runTenure(t, nil, append([]string{"debug", "-output", none}, tlsArgs...)...)
	if r.code != 1 || !strings.Contains(r.stderr, "debug right") || !strings.Contains(r.stderr, "no token") {
		t.Errorf("tenure debug without a token: exit %d, stderr %q; want 1 and a message about the token", r.code, r.stderr)
	}
	if _, err := os.Stat(none); !os.IsNotExist(err) {
		t.Errorf("tenure debug without a token left %s (%v)", none, err)
	}

	// Without -output: named after the node and the time, in the current
	// directory.
	cwd := t.TempDir()
	cmd := exec.Command(binary, append([]string{"debug", "-token", boot.SecretID}, tlsArgs...)...)
	cmd.Dir, cmd.Env = cwd, cleanEnv()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tenure debug without -output: %v\n%s", err, b)
	}
	names, _ := filepath.Glob(filepath.Join(cwd, "tenure-debug-dev-*.tar.gz"))
	if len(names) != 1 {
		t.Errorf("archives in the current directory = %v, want one tenure-debug-dev-<time>.tar.gz", names)
	}
	d.stop(t)
}

// checkPprof checks that b is a profile in the runtime/pprof format: gzip
// around a protocol buffer message whose top-level fields all parse, with
// sample types (field 1) and a string table (field 6) that names
// sampleType.
func checkPprof(b []byte, sampleType string) error {
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("not gzip: %w", err)
	}
	raw, err := io.ReadAll(gz)
	if err != nil {
		return fmt.Errorf("gzip: %w", err)
	}
	seen := map[uint64]bool{}
	var names [][]byte
	for i := 0; i < len(raw); {
		tag, n := pb.Uvarint(raw[i:])
		if n <= 0 {
			return fmt.Errorf("bad field tag at byte %d", i)
		}
		i += n
		field, wire := tag>>3, tag&7
		seen[field] = true
		switch wire {
		case 0:
			_, n := pb.Uvarint(raw[i:])
			if n <= 0 {
				return fmt.Errorf("bad varint of field %d at byte %d", field, i)
			}
			i += n
		case 2:
			l, n := pb.Uvarint(raw[i:])
			if n <= 0 || uint64(len(raw)-i-n) < l {
				return fmt.Errorf("bad length of field %d at byte %d", field, i)
			}
			i += n
			if field == 6 {
				names = append(names, raw[i:i+int(l)])
			}
			i += int(l)
		default:
			return fmt.Errorf("field %d has wire type %d, which a profile does not use", field, wire)
		}
	}
	if !seen[1] || !seen[6] {
		return fmt.Errorf("no sample types or no string table (fields %v)", seen)
	}
	for _, n := range names {
		if string(n) == sampleType {
			return nil
		}
	}
	return fmt.Errorf("the string table does not name the sample type %q", sampleType)
}

func fileNames(files map[string][]byte) []string {
	var out []string
	for n := range files {
		out = append(out, n)
	}
	return out
}
