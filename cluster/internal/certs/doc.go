// Package certs makes and loads the certificates of a tenure cluster: a
// certificate authority, server certificates that carry the server role of a
// cluster (the DNS name server.<cluster-name>.tenure among their SANs, as
// Consul's server.<dc>.consul), and client certificates; it builds the
// *tls.Config of a server's listener and of its own outgoing connections,
// and says whether a peer's certificate is that of a server of the cluster.
//
// `tenure tls` writes its files through this package; tests of other
// packages make their certificates with it. Certificates made elsewhere
// (openssl, a company CA) work as long as they follow the same rule.
//
// It uses only the standard library (crypto/x509, ECDSA P-256 keys). It keeps
// no state and never listens or dials. It is internal to tenure; the stable
// public API is package client.
package certs
