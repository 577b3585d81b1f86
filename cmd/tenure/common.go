package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/tenure-io/tenure/client"
)

// env is where a command writes.
type env struct {
	stdout, stderr io.Writer
}

// clusterFlags are the flags of every command that talks to a cluster.
type clusterFlags struct {
	httpAddr                  string
	caFile, certFile, keyFile string // TLS
	json                      bool
	token                     string // ACL token secret
}

// registerServers registers -http-addr and the TLS flags in fs, their
// defaults from the environment.
func (f *clusterFlags) registerServers(fs *flag.FlagSet) {
	fs.StringVar(&f.httpAddr, "http-addr", cmp.Or(os.Getenv(client.EnvHTTPAddr), client.DefaultHTTPAddr),
		"HTTP addresses of the servers, comma-separated; https://host:port for TLS (env "+client.EnvHTTPAddr+")")
	fs.StringVar(&f.caFile, "ca-file", os.Getenv(client.EnvCACert),
		"PEM CA certificate that signs the servers' certificates; addresses without a scheme then mean https (env "+client.EnvCACert+")")
	fs.StringVar(&f.certFile, "client-cert", os.Getenv(client.EnvClientCert),
		"PEM client certificate, for servers that require one (env "+client.EnvClientCert+")")
	fs.StringVar(&f.keyFile, "client-key", os.Getenv(client.EnvClientKey),
		"PEM key of -client-cert (env "+client.EnvClientKey+")")
}

func (f *clusterFlags) register(fs *flag.FlagSet) {
	f.registerServers(fs)
	fs.BoolVar(&f.json, "json", false, "print JSON instead of text")
	// The ACL token: -token, except where a command already has a -token
	// (leases renew and release: the fencing token); -acl-token everywhere.
	// The default is empty, not the variable, so that no usage message
	// ever prints the secret; config falls back to the variable.
	tokenUsage := "ACL token secret sent with every request (default $" + client.EnvHTTPToken + ")"
	if fs.Lookup("token") == nil {
		fs.StringVar(&f.token, "token", "", tokenUsage)
	}
	fs.StringVar(&f.token, "acl-token", "", tokenUsage)
}

// config returns the client configuration for the flags.
func (f *clusterFlags) config() *client.Config {
	cfg := client.DefaultConfig()
	cfg.Addresses = client.SplitAddresses(f.httpAddr)
	cfg.TLS.CAFile, cfg.TLS.CertFile, cfg.TLS.KeyFile = f.caFile, f.certFile, f.keyFile
	if f.token != "" {
		cfg.Token = f.token // else DefaultConfig's, from the variable
	}
	// A command makes one call or a few, and `lock` and `elect` one
	// renewal an interval: a request stream (docs/http-api.md) would be
	// one more connection for nothing. `tenure bench` turns it on.
	cfg.DisableStream = true
	return cfg
}

// newFlagSet returns a flag set for the command name (its path, such as
// "leases get") with the usage line given. The flag package's own
// messages are discarded: parse reports a bad flag in one line, and the
// whole help is printed for -h only.
func (e *env) newFlagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: tenure %s\n\nFlags:\n", usage)
		fs.SetOutput(e.stderr)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// parse parses args, allowing flags before, between and after positional
// arguments ("get KEY -stale"), and checks the number of positional
// arguments against [min, max] (max < 0: no limit). ok is false when the
// command must end with code.
func (e *env) parse(fs *flag.FlagSet, args []string, min, max int) (pos []string, code int, ok bool) {
	// Not the flag package but parse says what is wrong, in one line: the
	// whole help is for -h only.
	usage := fs.Usage
	fs.Usage = func() {}
	defer func() { fs.Usage = usage }()
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				usage()
				return nil, exitOK, false
			}
			return nil, e.usageError(fs, err.Error()), false
		}
		rest := fs.Args()
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if len(pos) < min || (max >= 0 && len(pos) > max) {
		return nil, e.usageError(fs, "wrong number of arguments"), false
	}
	return pos, exitOK, true
}

// given reports whether the command line that fs parsed set the flag name.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// usageError prints msg and where to find the usage of fs, in two lines,
// and returns exitUsage.
func (e *env) usageError(fs *flag.FlagSet, msg string) int {
	fmt.Fprintf(e.stderr, "error: %s\nRun 'tenure %s -h' for its usage.\n", msg, fs.Name())
	return exitUsage
}

// fail prints err and returns exitError.
func (e *env) fail(err error) int {
	fmt.Fprintf(e.stderr, "error: %s\n", failText(err))
	return exitError
}

// printJSON writes v as indented JSON.
func (e *env) printJSON(v any) int {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return e.fail(err)
	}
	return exitOK
}

// table returns a tabwriter for aligned columns; call Flush when done.
func (e *env) table() *tabwriter.Writer {
	return tabwriter.NewWriter(e.stdout, 0, 8, 2, ' ', 0)
}

// printTable writes an aligned table: the header, then a row of cells(i)
// for each i below n.
func (e *env) printTable(header []any, n int, cells func(i int) []any) {
	w := e.table()
	row(w, header...)
	for i := 0; i < n; i++ {
		row(w, cells(i)...)
	}
	w.Flush()
}

// row writes cells as one tab-separated row.
func row(w io.Writer, cells ...any) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(w, "\t")
		}
		fmt.Fprint(w, c)
	}
	fmt.Fprintln(w)
}

// pairs renders a map as "k=v" pairs in key order.
func pairs[V any](m map[string]V) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, m[k])
	}
	return strings.Join(parts, ",")
}

// metaFlag collects repeated -meta k=v flags.
type metaFlag map[string]string

func (m metaFlag) String() string { return pairs(map[string]string(m)) }

func (m metaFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	m[k] = v
	return nil
}

// connect parses the args of a command that talks to the cluster and
// returns its client and positional arguments; ok is false when the command
// must end with code.
func (e *env) connect(fs *flag.FlagSet, cf *clusterFlags, args []string, min, max int) (c *client.Client, pos []string, code int, ok bool) {
	pos, code, ok = e.parse(fs, args, min, max)
	if !ok {
		return nil, nil, code, false
	}
	c, err := client.New(cf.config())
	if err != nil {
		return nil, nil, e.fail(err), false
	}
	return c, pos, exitOK, true
}

// clusterFlagSet returns the flag set of name with usage, and the cluster
// flags registered in it.
func (e *env) clusterFlagSet(name, usage string) (*flag.FlagSet, *clusterFlags) {
	cf := &clusterFlags{}
	fs := e.newFlagSet(name, usage)
	cf.register(fs)
	return fs, cf
}

// askFunc asks the cluster what a command shows: it returns the answer as
// -json prints it and a function that prints it as text.
type askFunc = func(c *client.Client, pos []string) (v any, text func(), err error)

// badUsage is an error of an askFunc that is the command line's: answer
// reports it as a usage error.
type badUsage string

func (b badUsage) Error() string { return string(b) }

// query is answer for a command whose only flags are the cluster flags.
func (e *env) query(name, usage string, args []string, min, max int, ask askFunc) int {
	fs, cf := e.clusterFlagSet(name, usage)
	return e.answer(fs, cf, args, min, max, ask)
}

// answer runs a command that talks to the cluster: it parses args with fs
// (min to max positional arguments), connects with the cluster flags cf
// registered in fs, and prints what ask returns.
func (e *env) answer(fs *flag.FlagSet, cf *clusterFlags, args []string, min, max int, ask askFunc) int {
	c, pos, code, ok := e.connect(fs, cf, args, min, max)
	if !ok {
		return code
	}
	v, text, err := ask(c, pos)
	if bad := badUsage(""); errors.As(err, &bad) {
		return e.usageError(fs, string(bad))
	}
	return e.show(cf.json, v, err, text)
}

// show ends a command that prints v: it fails with err, or prints v as
// JSON with asJSON, or else calls text.
func (e *env) show(asJSON bool, v any, err error, text func()) int {
	switch {
	case err != nil:
		return e.fail(err)
	case asJSON:
		return e.printJSON(v)
	}
	text()
	return exitOK
}

// deleteOne runs a command whose only flags are the cluster flags and
// whose one argument names what to delete: del deletes it, and done (a
// format of the name) says so.
func (e *env) deleteOne(name, usage string, args []string, done string, del func(c *client.Client, name string) error) int {
	fs, cf := e.clusterFlagSet(name, usage)
	c, pos, code, ok := e.connect(fs, cf, args, 1, 1)
	if !ok {
		return code
	}
	if err := del(c, pos[0]); err != nil {
		return e.fail(err)
	}
	fmt.Fprintf(e.stdout, done, pos[0])
	return exitOK
}

// confirmed reports whether the user confirmed with want: given (a
// -confirm flag), or else the line typed into in after prompt. When not,
// it prints why: "error: no confirmation: " and none, or mismatch, a
// format of what was typed and want.
func (e *env) confirmed(in io.Reader, given, want, prompt, none, mismatch string) bool {
	if given == "" {
		fmt.Fprint(e.stderr, prompt)
		line, err := bufio.NewReader(in).ReadString('\n')
		if err != nil && line == "" {
			fmt.Fprintln(e.stderr, "\nerror: no confirmation: "+none)
			return false
		}
		given = strings.TrimSpace(line)
	}
	if given != want {
		fmt.Fprintf(e.stderr, mismatch, given, want)
		return false
	}
	return true
}

// subcommands dispatches args[0] to one of cmds, printing usage otherwise.
func (e *env) subcommands(ctx context.Context, args []string, usage string, cmds map[string]command) int {
	name := commandPath(usage)
	if len(args) == 0 {
		fmt.Fprintf(e.stderr, "error: %s needs a subcommand\nRun 'tenure %s -h' for the list.\n", name, name)
		return exitUsage
	}
	if f, ok := cmds[args[0]]; ok {
		return f(ctx, args[1:])
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		fmt.Fprint(e.stdout, usage)
		return exitOK
	}
	fmt.Fprintf(e.stderr, "error: unknown subcommand %q of %s\nRun 'tenure %s -h' for the list.\n", args[0], name, name)
	return exitUsage
}

// commandPath is the command a usage text is of: "leases" for
// "Usage: tenure leases <subcommand> [args]".
func commandPath(usage string) string {
	line, _, _ := strings.Cut(usage, "\n")
	line = strings.TrimPrefix(line, "Usage: tenure ")
	path, _, _ := strings.Cut(line, " <")
	return path
}

// compareCounting orders names the way people count: a run of digits
// compares by its value, so partitions/2 comes before partitions/10 (and,
// of equal values, the one with fewer leading zeros first); the rest
// compares by code point. Kept here rather than taken from a library: it
// is these few lines.
func compareCounting(a, b string) int {
	for a != "" && b != "" {
		if da, db := digits(a), digits(b); da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Or(cmp.Compare(len(na), len(nb)), strings.Compare(na, nb), cmp.Compare(da, db)); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		ra, sa := utf8.DecodeRuneInString(a)
		rb, sb := utf8.DecodeRuneInString(b)
		if ra != rb {
			return cmp.Compare(ra, rb)
		}
		a, b = a[sa:], b[sb:]
	}
	return cmp.Compare(len(a), len(b))
}

// digits is the length of the run of ASCII digits s starts with.
func digits(s string) int {
	n := 0
	for n < len(s) && '0' <= s[n] && s[n] <= '9' {
		n++
	}
	return n
}
