package integration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	"github.com/redis/go-redis/v9"
	"github.com/tenure-io/tenure/test/harness"
)

// The users' own stores for the fencing tests: a PostgreSQL server and a
// redis-server of Debian's packages (`make test` installs them as root when
// they are missing), each started on a free loopback port with its data in
// the test's temporary directory and stopped by its pid at the end. A test
// that needs one skips when it is missing, and fails under CI=true.

// storeTimeout bounds a store's start.
const storeTimeout = 30 * time.Second

// needStore skips t for want of a store, or fails it under CI=true.
func needStore(t *testing.T, format string, args ...any) {
	t.Helper()
	harness.Missing(t, fmt.Sprintf(format, args...)+" (`make test` installs it as root)")
}

// startPostgres starts a PostgreSQL server and returns an open *sql.DB
// (driver pgx) and its DSN, for the database "postgres" as the superuser
// "tenure" (trust authentication on loopback only).
func startPostgres(t *testing.T) (*sql.DB, string) {
	t.Helper()
	pg, err := harness.InitPostgres("")
	if errors.Is(err, harness.ErrNoPostgres) {
		needStore(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(pg.Dir) })
	port := harness.FreeAddr(t)
	_, p, _ := net.SplitHostPort(port)
	pn, _ := strconv.Atoi(p)
	srv := exec.Command(filepath.Join(pg.Bin, "postgres"), pg.ServerArgs("127.0.0.1", pn)...)
	srv.SysProcAttr = &syscall.SysProcAttr{Credential: pg.Cred, Pdeathsig: syscall.SIGKILL}
	log := &harness.Buffer{}
	srv.Stdout, srv.Stderr = log, log
	if err := srv.Start(); err != nil {
		t.Fatalf("postgres: %v", err)
	}
	stopped := stopByPid(t, "postgres", srv, syscall.SIGINT) // fast shutdown
	dsn := fmt.Sprintf("postgres://tenure@127.0.0.1:%s/postgres?sslmode=disable", p)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	waitStore(t, "postgres", stopped, log, func(ctx context.Context) error { return db.PingContext(ctx) })
	return db, dsn
}

// startRedis starts a redis-server without persistence and returns a
// client of it and its address.
func startRedis(t *testing.T) (*redis.Client, string) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		needStore(t, "redis-server not found (Debian's redis-server)")
	}
	addr := harness.FreeAddr(t)
	_, p, _ := net.SplitHostPort(addr)
	srv := exec.Command(bin, "--port", p, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--daemonize", "no")
	srv.SysProcAttr = childProcAttr()
	log := &harness.Buffer{}
	srv.Stdout, srv.Stderr = log, log
	if err := srv.Start(); err != nil {
		t.Fatalf("redis-server: %v", err)
	}
	stopped := stopByPid(t, "redis-server", srv, syscall.SIGTERM)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	waitStore(t, "redis-server", stopped, log, func(ctx context.Context) error { return rdb.Ping(ctx).Err() })
	return rdb, addr
}

// stopByPid stops cmd's process with sig at the end of the test, then
// kills it if it is still there after 10 s. The channel it returns closes
// when the process exits.
func stopByPid(t *testing.T, name string, cmd *exec.Cmd, sig syscall.Signal) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(sig)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Logf("%s (pid %d) did not stop in 10s: killed", name, cmd.Process.Pid)
			cmd.Process.Kill()
			<-done
		}
	})
	return done
}

// waitStore waits until ping answers, failing t with the store's log if
// the store exits or storeTimeout passes first.
func waitStore(t *testing.T, name string, exited <-chan struct{}, log *harness.Buffer, ping func(context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(storeTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := ping(ctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-exited:
			t.Fatalf("%s exited before it answered: %v\n%s", name, err, log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer within %v: %v\n%s", name, storeTimeout, err, log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
