package certs

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// File names that `tenure tls` writes, as `consul tls` does.
const (
	CACertFile = "tenure-ca.pem"
	CAKeyFile  = "tenure-ca-key.pem"
)

// ServerFiles returns the file names of the server certificate of nodeID:
// "<cluster>-server-<node-id>.pem" and "…-key.pem".
func ServerFiles(clusterName, nodeID string) (cert, key string) {
	base := fmt.Sprintf("%s-server-%s", cmp.Or(clusterName, DefaultClusterName), nodeID)
	return base + ".pem", base + "-key.pem"
}

// ClientFiles returns the file names of the client certificate called
// name: "<cluster>-client-<name>.pem" and "…-key.pem".
func ClientFiles(clusterName, name string) (cert, key string) {
	base := fmt.Sprintf("%s-client-%s", cmp.Or(clusterName, DefaultClusterName), name)
	return base + ".pem", base + "-key.pem"
}

// WritePair writes p's certificate to certPath (mode 0644) and its key to
// keyPath (mode 0600). It never overwrites: when either file exists it
// writes nothing and returns an error wrapping ErrExists. When the second
// write fails, the first file is removed.
func WritePair(certPath, keyPath string, p Pair) error {
	for _, path := range []string{certPath, keyPath} {
		if _, err := os.Lstat(path); err == nil {
			return fmt.Errorf("%s: %w; remove it or choose another name", path, ErrExists)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := writeNew(certPath, p.CertPEM, 0o644); err != nil {
		return err
	}
	if err := writeNew(keyPath, p.KeyPEM, 0o600); err != nil {
		os.Remove(certPath)
		return err
	}
	return nil
}

// writeNew creates path with mode perm (never an existing file) and writes
// b to it, syncing before it returns.
func writeNew(path string, b []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s: %w", path, ErrExists)
	}
	if err != nil {
		return err
	}
	// The mode is exactly perm, whatever the umask.
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(b)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// LoadAuthority reads the CA from its certificate and key files.
func LoadAuthority(certPath, keyPath string) (*Authority, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	a, err := ParseAuthority(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s, %s: %w", certPath, keyPath, err)
	}
	return a, nil
}
