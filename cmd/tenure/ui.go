package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/tenure-io/tenure/client"
)

// ui serves the inspection page of a cluster whose servers ask every
// client for a certificate (-tls-verify-incoming), which a browser does
// not have: it listens on a loopback address and passes each request to
// the first server of -http-addr over the cluster's TLS, presenting the
// client certificate of -client-cert. The page and its API calls then
// reach the cluster as this command's user; the ACL token is still the
// one typed into the page. It runs until interrupted.
func (e *env) ui(ctx context.Context, args []string) int {
	fs, cf := e.clusterFlagSet("ui", "ui [-listen 127.0.0.1:7600] [-http-addr A] [-ca-file F -client-cert F -client-key F]")
	listen := fs.String("listen", "127.0.0.1:7600", "loopback address to serve the page on (port 0: any free port)")
	if _, code, ok := e.parse(fs, args, 0, 0); !ok {
		return code
	}
	if err := loopbackListen(*listen); err != nil {
		return e.usageError(fs, err.Error())
	}
	proxy, target, err := uiProxy(cf.config())
	if err != nil {
		return e.fail(err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return e.fail(fmt.Errorf("ui: -listen %s: %w", *listen, err))
	}
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(e.stdout, "Serving the page of %s at http://%s/ui (only on this machine: it uses your client certificate); interrupt to stop\n", target, ln.Addr())
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return e.fail(fmt.Errorf("ui: %w", err))
	}
	return exitOK
}

// loopbackListen refuses a listen address that is not on a loopback
// interface: whoever reaches the proxy acts with the user's certificate.
func loopbackListen(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-listen %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("-listen %q: must be a loopback address (127.0.0.1, ::1 or localhost): whoever reaches it acts with your client certificate", addr)
	}
	return nil
}

// uiProxy is the reverse proxy to the first server of cfg.Addresses with
// cfg's TLS settings, and that server's URL.
func uiProxy(cfg *client.Config) (http.Handler, string, error) {
	if len(cfg.Addresses) == 0 {
		return nil, "", errors.New("ui: no server address: set -http-addr or " + client.EnvHTTPAddr)
	}
	tc, err := cfg.TLS.Build()
	if err != nil {
		return nil, "", fmt.Errorf("ui: %w", err)
	}
	raw := cfg.Addresses[0]
	scheme := "http"
	if tc != nil {
		scheme = "https"
	}
	target, err := url.Parse(raw)
	if err != nil || target.Host == "" {
		target, err = url.Parse(scheme + "://" + raw)
	}
	if err != nil {
		return nil, "", fmt.Errorf("ui: server address %q: %w", raw, err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tc
	p := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport:     transport,
		FlushInterval: -1, // blocking reads and the event stream answer at once
	}
	return p, target.String(), nil
}
