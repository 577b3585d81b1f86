package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tenure-io/tenure/cluster"
)

const tlsUsage = `Usage: tenure tls <subcommand> [flags]

Subcommands:
    ca create      Make a certificate authority: tenure-ca.pem, tenure-ca-key.pem
    cert create    Make a server (-server -node-id ID) or client (-client)
                   certificate signed by that CA

Files are written to -dir (default: the current directory) and never
overwritten; key files get mode 0600. Run "tenure tls ca create -h" or
"tenure tls cert create -h" for the flags.
`

// days turns the -days flag into a duration.
func days(n int) (time.Duration, error) {
	if n <= 0 {
		return 0, fmt.Errorf("-days must be positive, got %d", n)
	}
	return time.Duration(n) * 24 * time.Hour, nil
}

func (e *env) tlsCACreate(_ context.Context, args []string) int {
	fs := e.newFlagSet("tls ca create", "tls ca create [-dir D] [-cluster-name NAME] [-days N]")
	dir := fs.String("dir", ".", "directory to write tenure-ca.pem and tenure-ca-key.pem to")
	name := fs.String("cluster-name", cluster.DefaultClusterName, "cluster name, in the CA's subject")
	n := fs.Int("days", int(cluster.DefaultCAValidity/(24*time.Hour)), "days the CA is valid")
	if _, code, ok := e.parse(fs, args, 0, 0); !ok {
		return code
	}
	validity, err := days(*n)
	if err != nil {
		return e.usageError(fs, err.Error())
	}
	ca, err := cluster.NewCertAuthority(cluster.CAOptions{ClusterName: *name, Validity: validity})
	if err != nil {
		return e.usageError(fs, err.Error())
	}
	key, err := ca.KeyPEM()
	if err != nil {
		return e.fail(err)
	}
	certPath, keyPath := filepath.Join(*dir, cluster.CACertFile), filepath.Join(*dir, cluster.CAKeyFile)
	if err := cluster.WriteCertPair(certPath, keyPath, cluster.CertPair{CertPEM: ca.CertPEM(), KeyPEM: key}); err != nil {
		return e.fail(err)
	}
	fmt.Fprintf(e.stdout, "==> Saved %s\n==> Saved %s\n", certPath, keyPath)
	return exitOK
}

// namesFlag collects a repeatable flag of names or addresses; each value may also be a
// comma-separated list.
type namesFlag []string

func (l *namesFlag) String() string { return strings.Join(*l, ",") }

func (l *namesFlag) Set(s string) error {
	*l = append(*l, splitList(s)...)
	return nil
}

func (e *env) tlsCertCreate(_ context.Context, args []string) int {
	fs := e.newFlagSet("tls cert create", "tls cert create (-server -node-id ID | -client [-name NAME]) [flags]")
	var (
		server, clientCert bool
		dnsNames, ipAddrs  namesFlag
	)
	fs.BoolVar(&server, "server", false, "make a server certificate (server and client auth, SANs server.<cluster-name>.tenure and tenure://<cluster-name>/server/<node-id>)")
	fs.BoolVar(&clientCert, "client", false, "make a client certificate (client auth only)")
	nodeID := fs.String("node-id", "", "node id of the server (-server): its certificate names it, and peers check it")
	name := fs.String("name", "", "name of the client, its common name (-client; default: the next free number)")
	clusterName := fs.String("cluster-name", cluster.DefaultClusterName, "cluster name: servers get the SAN server.<cluster-name>.tenure")
	fs.Var(&dnsNames, "additional-dnsname", "extra DNS SAN of a server certificate (repeatable)")
	fs.Var(&ipAddrs, "additional-ipaddress", "extra IP SAN of a server certificate (repeatable)")
	dir := fs.String("dir", ".", "directory to write the certificate and key to")
	caFile := fs.String("ca", "", "CA certificate (default: <dir>/"+cluster.CACertFile+")")
	caKey := fs.String("key", "", "CA key (default: <dir>/"+cluster.CAKeyFile+")")
	n := fs.Int("days", int(cluster.DefaultCertValidity/(24*time.Hour)), "days the certificate is valid (never past the CA's end)")
	if _, code, ok := e.parse(fs, args, 0, 0); !ok {
		return code
	}
	switch {
	case server == clientCert:
		return e.usageError(fs, "give exactly one of -server and -client")
	case server && *nodeID == "":
		return e.usageError(fs, "-node-id is required with -server")
	case server && *name != "":
		return e.usageError(fs, "-name is for -client; a server is named by -node-id")
	case clientCert && (*nodeID != "" || len(dnsNames) > 0 || len(ipAddrs) > 0):
		return e.usageError(fs, "-node-id, -additional-dnsname and -additional-ipaddress are for -server")
	}
	var ips []net.IP
	for _, s := range ipAddrs {
		ip := net.ParseIP(s)
		if ip == nil {
			return e.usageError(fs, fmt.Sprintf("-additional-ipaddress %q is not an IP address", s))
		}
		ips = append(ips, ip)
	}
	validity, err := days(*n)
	if err != nil {
		return e.usageError(fs, err.Error())
	}
	*caFile = cmp.Or(*caFile, filepath.Join(*dir, cluster.CACertFile))
	*caKey = cmp.Or(*caKey, filepath.Join(*dir, cluster.CAKeyFile))
	ca, err := cluster.LoadCertAuthority(*caFile, *caKey)
	if err != nil {
		return e.fail(fmt.Errorf("%w (make one with: tenure tls ca create)", err))
	}
	var (
		pair              cluster.CertPair
		certName, keyName string
	)
	if server {
		pair, err = ca.IssueServer(cluster.ServerCertOptions{ClusterName: *clusterName, NodeID: *nodeID, DNSNames: dnsNames, IPAddresses: ips, Validity: validity})
		certName, keyName = cluster.ServerCertFiles(*clusterName, *nodeID)
	} else {
		fileName, cn := *name, *name
		if fileName == "" {
			if fileName, err = nextClientNumber(*dir, *clusterName); err != nil {
				return e.fail(err)
			}
			cn = "client-" + fileName
		}
		pair, err = ca.IssueClient(cluster.ClientCertOptions{ClusterName: *clusterName, Name: cn, Validity: validity})
		certName, keyName = cluster.ClientCertFiles(*clusterName, fileName)
	}
	if err != nil {
		return e.usageError(fs, err.Error())
	}
	certPath, keyPath := filepath.Join(*dir, certName), filepath.Join(*dir, keyName)
	if err := cluster.WriteCertPair(certPath, keyPath, pair); err != nil {
		return e.fail(err)
	}
	fmt.Fprintf(e.stdout, "==> Using %s and %s\n==> Saved %s\n==> Saved %s\n", *caFile, *caKey, certPath, keyPath)
	return exitOK
}

// nextClientNumber returns the smallest n for which no client certificate
// <cluster>-client-<n>.pem exists in dir.
func nextClientNumber(dir, clusterName string) (string, error) {
	for n := 0; ; n++ {
		certName, _ := cluster.ClientCertFiles(clusterName, strconv.Itoa(n))
		_, err := os.Lstat(filepath.Join(dir, certName))
		if errors.Is(err, fs.ErrNotExist) {
			return strconv.Itoa(n), nil
		}
		if err != nil {
			return "", err
		}
	}
}
