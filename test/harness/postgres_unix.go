//go:build unix

package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
)

// Postgres is a data directory made by initdb for a test's PostgreSQL
// server, from Debian's postgresql package: superuser "tenure", trust
// authentication. Its folder is made under the system's temporary
// folder, not the test's (whose parents may be root's alone), and owned
// by the package's user postgres when this process is root, since the
// server refuses to run as root.
type Postgres struct {
	Bin  string              // the server's bin folder (postgres, initdb)
	Dir  string              // the folder: the data dir, and the Unix socket
	Data string              // the data directory
	Cred *syscall.Credential // whom to run the server as; nil: this process's user
}

// ErrNoPostgres: Debian's PostgreSQL server is not installed.
var ErrNoPostgres = errors.New("PostgreSQL not found (/usr/lib/postgresql/*/bin/postgres; Debian's postgresql)")

// InitPostgres runs initdb into a new folder; trustNet, if not empty (for
// example "10.203.10.0/24"), is a network whose clients are trusted too
// (loopback always is). Remove the folder (Dir) when the server is gone.
func InitPostgres(trustNet string) (*Postgres, error) {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(bins) == 0 {
		return nil, ErrNoPostgres
	}
	sort.Strings(bins)
	pg := &Postgres{Bin: filepath.Dir(bins[len(bins)-1])}
	dir, err := os.MkdirTemp("", "tenure-postgres-")
	if err != nil {
		return nil, err
	}
	pg.Dir, pg.Data = dir, filepath.Join(dir, "data")
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("PostgreSQL runs as user postgres, which is missing: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		pg.Cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	initdb := exec.Command(filepath.Join(pg.Bin, "initdb"), "-D", pg.Data, "-U", "tenure", "--auth=trust", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: pg.Cred, Pdeathsig: syscall.SIGKILL}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	if trustNet != "" {
		hba, err := os.OpenFile(filepath.Join(pg.Data, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
		if err == nil {
			_, err = fmt.Fprintf(hba, "host all all %s trust\n", trustNet)
			err = errors.Join(err, hba.Close())
		}
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	return pg, nil
}

// ServerArgs are the arguments of the postgres server listening on host
// and port, without fsync (a test's data need not survive a crash).
func (pg *Postgres) ServerArgs(host string, port int) []string {
	return []string{"-D", pg.Data, "-h", host, "-p", strconv.Itoa(port), "-k", pg.Dir,
		"-c", "fsync=off", "-c", "max_connections=100"}
}
