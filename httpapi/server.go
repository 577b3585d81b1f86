package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"runtime"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/docs"
	"github.com/tenure-io/tenure/fsm"
)

// headerForwardedBy marks a request forwarded by another server. The
// headers that clients read are package client's (Header*).
const headerForwardedBy = "X-Tenure-Forwarded-By"

// MaxBodyBytes bounds every request body but a bulk renewal's and a
// restore's.
const MaxBodyBytes = 64 << 10

// MaxRenewBodyBytes bounds the body of a bulk renewal (POST /v1/renew):
// MaxRenewBatch leases, each with a key of fsm.MaxKeyLen bytes, a token
// and a secret of 128 characters (about 450 bytes as JSON), fit in it.
// Under MaxBodyBytes, a keep-alive of 1,024 leases with keys of 60 bytes
// was refused whole.
const MaxRenewBodyBytes = 512 << 10

// Config configures the API server.
type Config struct {
	Node   Node
	Logger hclog.Logger
	// Gatherer serves /metrics; nil serves an empty registry.
	Gatherer prometheus.Gatherer
	// Registerer takes the request metrics (tenure_http_*); nil leaves
	// requests uncounted.
	Registerer prometheus.Registerer
	// WriteTimeout bounds how long a write or renewal waits for Raft
	// before answering 504 timeout (blocking acquires add their wait).
	WriteTimeout time.Duration
	// MaxBlockingWait caps the wait of blocking queries.
	MaxBlockingWait time.Duration
	// StreamIdleTimeout closes a request stream that sends no frame for
	// this long (-http-idle-timeout; 0 is the default's 2 minutes).
	StreamIdleTimeout time.Duration
	// ForwardClient sends forwarded requests; it must not time out on its
	// own, since blocking requests may take minutes. With TLS on, make it
	// with NewForwardClient: it presents this server's own certificate and
	// accepts only a certificate of the cluster's CA that names the node
	// id of the server the request is for.
	ForwardClient *http.Client
	// ForwardScheme is "http", or "https" when the servers serve the API
	// over TLS. The leader's address (Replica.LeaderHTTP) is host:port; the
	// scheme comes from here, since every server of a cluster runs TLS or
	// none does.
	ForwardScheme string
	// MetricsOpen serves /metrics without a token while ACLs are on
	// (otherwise it needs the operator right).
	MetricsOpen bool
	// LogTail, if not nil, holds this server's recent log lines for GET
	// /v1/debug/logs (404 without one).
	LogTail *LogTail
	// RefusalLogLines and RefusalLogInterval limit the log of refused
	// requests: per error code, at most RefusalLogLines acl_request lines
	// every RefusalLogInterval, then one acl_requests_suppressed line
	// that counts the rest.
	RefusalLogLines    int
	RefusalLogInterval time.Duration
	// MaxActive bounds the requests this server works on at once: those
	// it serves as leader (leader, reader) and stale reads; not blocking
	// queries nor the local routes (status, members, events, health,
	// metrics, debug, the page). Past it a request waits, up to
	// MaxQueueWait, with at most MaxQueued others (see admission). 0
	// admits every request at once.
	MaxActive    int
	MaxQueued    int
	MaxQueueWait time.Duration
}

// DefaultConfig returns a Config with defaults; the caller sets Node
// (NodeOf).
func DefaultConfig() Config {
	return Config{
		Logger:          hclog.NewNullLogger(),
		WriteTimeout:    30 * time.Second,
		MaxBlockingWait: 10 * time.Minute,

		StreamIdleTimeout: 2 * time.Minute,
		ForwardClient:     &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second}},
		ForwardScheme:     "http",

		RefusalLogLines:    DefaultRefusalLogLines,
		RefusalLogInterval: DefaultRefusalLogInterval,

		MaxActive:    DefaultMaxActive(),
		MaxQueued:    DefaultMaxQueued,
		MaxQueueWait: DefaultMaxQueueWait,
	}
}

// DefaultMaxActive is Config.MaxActive's default: 128 requests per CPU
// the Go runtime may use (GOMAXPROCS), 256 on two cores. Writes commit in
// batches, and fewer in flight make smaller batches: 64 on two cores
// halved the acquisitions a second of 256 clients; 256 kept them, and
// kept the leader under 2,000 clients (docs/adr/0034).
func DefaultMaxActive() int { return 128 * runtime.GOMAXPROCS(0) }

// Defaults of Config.MaxQueued and MaxQueueWait.
const (
	DefaultMaxQueued    = 8192
	DefaultMaxQueueWait = 500 * time.Millisecond
)

// Validate checks the config.
func (c Config) Validate() error {
	switch {
	case c.Node.Replica == nil:
		return errors.New("node: replica required")
	case c.Logger == nil:
		return errors.New("logger: required")
	case c.WriteTimeout <= 0:
		return fmt.Errorf("write-timeout: %v must be positive", c.WriteTimeout)
	case c.MaxBlockingWait <= 0:
		return fmt.Errorf("max-blocking-wait: %v must be positive", c.MaxBlockingWait)
	case c.ForwardClient == nil:
		return errors.New("forward-client: required")
	case c.ForwardScheme != "http" && c.ForwardScheme != "https":
		return fmt.Errorf("forward-scheme: %q must be http or https", c.ForwardScheme)
	case c.RefusalLogLines < 1:
		return fmt.Errorf("refusal-log-lines: %d must be at least 1", c.RefusalLogLines)
	case c.RefusalLogInterval <= 0:
		return fmt.Errorf("refusal-log-interval: %v must be positive", c.RefusalLogInterval)
	case c.MaxActive < 0:
		return fmt.Errorf("http-max-active: %d must not be negative (0 admits every request at once)", c.MaxActive)
	case c.MaxActive > 0 && c.MaxQueued < 0:
		return fmt.Errorf("max-queued: %d must not be negative", c.MaxQueued)
	case c.MaxActive > 0 && c.MaxQueueWait < 0:
		return fmt.Errorf("http-max-queue-wait: %v must not be negative", c.MaxQueueWait)
	}
	return nil
}

// Server is the HTTP API of one node. It is an http.Handler.
type Server struct {
	cfg    Config
	node   Node
	log    hclog.Logger
	router *mux.Router
	// handler is route, instrumented when Config.Registerer is set.
	handler http.Handler
	// snapshotSlot admits one snapshot body at a time (receivingSnapshot).
	snapshotSlot chan struct{}
	// refusals limits the log of refused requests; refused counts those
	// of the ACL check (tenure_acl_refusals_total).
	refusals *cluster.LogLimiter
	refused  *prometheus.CounterVec
	// admission bounds the client requests worked on at once; nil with
	// Config.MaxActive 0.
	admission *admission
	// carried are the routes of the calls a request stream carries, by
	// method and path prefix (carry); metrics counts requests, nil
	// without Config.Registerer.
	carried map[string]carriedRoute
	metrics *requestMetrics
}

// New validates cfg and builds the routes.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid http config: %w", err)
	}
	if cfg.Gatherer == nil {
		cfg.Gatherer = prometheus.NewRegistry()
	}
	s := &Server{cfg: cfg, node: cfg.Node, log: cfg.Logger.Named("http"), router: mux.NewRouter(), snapshotSlot: make(chan struct{}, 1),
		refused: newRefusalCounter(), carried: map[string]carriedRoute{}}
	s.refusals = aclRefusalLog(s.log, cfg.RefusalLogLines, cfg.RefusalLogInterval)
	if cfg.MaxActive > 0 {
		s.admission = newAdmission(cfg.MaxActive, cfg.MaxQueued, cfg.MaxQueueWait)
	}
	r := s.router
	r.UseEncodedPath()
	r.SkipClean(true) // keys may contain "//" or "..": never redirect them
	key := "/{key:.+}"
	// Every route names what it needs of the request's ACL token (need);
	// with ACLs off everything is allowed. Writes and linearizable reads
	// go to the leader, which checks the token it is forwarded.
	// The calls a request stream carries (stream.go) are registered by
	// carry, which keeps their handlers for the stream's frames too.
	s.carry(http.MethodPut, "/v1/leases"+key, s.leader(s.guard(onKey(fsm.RightWrite), s.acquire)))
	s.carry(http.MethodDelete, "/v1/leases"+key, s.leader(s.guard(onKey(fsm.RightWrite), s.release)))
	s.carry(http.MethodGet, "/v1/leases"+key, s.reader(s.guard(onKey(fsm.RightRead), s.getLease)))
	r.Handle("/v1/leases", s.reader(s.guard(onPrefix(fsm.RightRead), s.listLeases))).Methods(http.MethodGet)
	s.carry(http.MethodPost, "/v1/renew"+key, s.renewer(s.guard(onKey(fsm.RightWrite), s.renewOne)))
	// One connection for many lease calls at once (stream.go).
	r.Handle(wire.StreamPath, s.local(anyToken, s.stream)).Methods(http.MethodGet)
	s.carry(http.MethodPost, "/v1/renew", s.renewer(s.guard(anyToken, s.renewMany))) // write on every key: checked in renewMany
	r.Handle("/v1/revoke"+key, s.leader(s.guard(onKey(fsm.RightRevoke), s.revoke))).Methods(http.MethodPost)
	r.Handle("/v1/revoke", s.leader(s.guard(fixed(fsm.RightRevoke, "key", ""), s.revokeHolder))).Methods(http.MethodPost) // revoke on every key
	r.Handle("/v1/operator/servers/{id}", s.leader(s.guard(onCluster(fsm.RightOperator), s.removeServer))).Methods(http.MethodDelete)
	r.Handle("/v1/operator/servers/{id}/promote", s.leader(s.guard(onCluster(fsm.RightOperator), s.promoteServer))).Methods(http.MethodPost)
	r.Handle("/v1/operator/servers/{id}/readmit", s.leader(s.guard(onCluster(fsm.RightOperator), s.readmitServer))).Methods(http.MethodPost)
	r.Handle("/v1/operator/transfer-leader", s.leader(s.guard(onCluster(fsm.RightOperator), s.transferLeader))).Methods(http.MethodPost)
	// Groups, controls and workers.
	group := "/v1/groups/{name:.+?}"
	r.Handle("/v1/groups", s.reader(s.guard(fixed(fsm.RightRead, "group", ""), s.listGroups))).Methods(http.MethodGet)
	r.Handle(group+"/assignment", s.reader(s.guard(onGroup(fsm.RightRead), s.assignment))).Methods(http.MethodGet)
	r.Handle(group+"/keys", s.leader(s.guard(onGroup(fsm.RightGroups), s.groupKeys))).Methods(http.MethodPost)
	r.Handle(group+"/keys", s.leader(s.guard(onGroup(fsm.RightGroups), s.setGroupKeys))).Methods(http.MethodPut)
	r.Handle(group+"/max-per-worker", s.leader(s.guard(onGroup(fsm.RightGroups), s.maxPerWorker))).Methods(http.MethodPut)
	r.Handle(group+"/balance", s.leader(s.guard(onGroup(fsm.RightGroups), s.setBalance))).Methods(http.MethodPut)
	r.Handle(group+"/prepared", s.leader(s.guard(anyToken, s.prepared))).Methods(http.MethodPost) // checked in Prepared
	r.Handle(group, s.reader(s.guard(onGroup(fsm.RightRead), s.getGroup))).Methods(http.MethodGet)
	r.Handle(group, s.leader(s.guard(onGroup(fsm.RightGroups), s.putGroup))).Methods(http.MethodPut)
	r.Handle(group, s.leader(s.guard(onGroup(fsm.RightGroups), s.deleteGroup))).Methods(http.MethodDelete)
	// Placement health needs read on every group; the leader alone knows
	// renewal times and how long keys have been free.
	r.Handle("/v1/health/placement", s.leader(s.guard(fixed(fsm.RightRead, "group", ""), s.placementHealth))).Methods(http.MethodGet)
	r.Handle("/v1/controls"+key, s.reader(s.guard(onKey(fsm.RightRead), s.getControl))).Methods(http.MethodGet)
	r.Handle("/v1/controls"+key, s.leader(s.guard(onKey(fsm.RightGroups), s.putControl))).Methods(http.MethodPut)
	r.Handle("/v1/controls"+key, s.leader(s.guard(onKey(fsm.RightGroups), s.editControl))).Methods(http.MethodPatch)
	r.Handle("/v1/workers", s.reader(s.guard(fixed(fsm.RightRead, "worker", ""), s.listWorkers))).Methods(http.MethodGet)
	r.Handle("/v1/workers/{id}/drain", s.leader(s.guard(onWorker(fsm.RightGroups), s.drainWorker))).Methods(http.MethodPost)
	r.Handle("/v1/workers/{id}/register", s.leader(s.guard(anyToken, s.registerWorker))).Methods(http.MethodPost) // checked in registerWorker
	// ACL tokens and policies.
	r.Handle("/v1/acl/bootstrap", s.leader(s.guard(open, s.aclBootstrap))).Methods(http.MethodPost)
	r.Handle("/v1/acl/token", s.leader(s.guard(onCluster(fsm.RightACL), s.aclCreateToken))).Methods(http.MethodPut)
	r.Handle("/v1/acl/tokens", s.reader(s.guard(onCluster(fsm.RightACL), s.aclListTokens))).Methods(http.MethodGet)
	r.Handle("/v1/acl/token/self", s.reader(s.guard(anyToken, s.aclSelf))).Methods(http.MethodGet)
	// What the request's token may do, answered by this node from its own
	// copy of the ACL state, as a stale read is (see aclAuthorize).
	r.Handle("/v1/acl/authorize", s.local(anyTokenAsks, s.aclAuthorize)).Methods(http.MethodPost)
	r.Handle("/v1/acl/token/{accessor}", s.reader(s.guard(onCluster(fsm.RightACL), s.aclReadToken))).Methods(http.MethodGet)
	r.Handle("/v1/acl/token/{accessor}", s.leader(s.guard(onCluster(fsm.RightACL), s.aclDeleteToken))).Methods(http.MethodDelete)
	r.Handle("/v1/acl/policies", s.reader(s.guard(onCluster(fsm.RightACL), s.aclListPolicies))).Methods(http.MethodGet)
	r.Handle("/v1/acl/policy/{name}", s.reader(s.guard(onCluster(fsm.RightACL), s.aclReadPolicy))).Methods(http.MethodGet)
	r.Handle("/v1/acl/policy/{name}", s.leader(s.guard(onCluster(fsm.RightACL), s.aclSetPolicy))).Methods(http.MethodPut)
	r.Handle("/v1/acl/policy/{name}", s.leader(s.guard(onCluster(fsm.RightACL), s.aclDeletePolicy))).Methods(http.MethodDelete)
	// Local answers.
	r.Handle("/v1/snapshot", s.leader(s.guard(onCluster(fsm.RightOperator), s.saveSnapshot))).Methods(http.MethodGet)
	r.Handle("/v1/snapshot", s.receivingSnapshot(onCluster(fsm.RightOperator), s.leader(s.guard(onCluster(fsm.RightOperator), s.restoreSnapshot)))).Methods(http.MethodPut)
	r.Handle("/v1/operator/snapshot", s.local(onCluster(fsm.RightOperator), s.snapshot)).Methods(http.MethodPost)
	r.Handle("/v1/operator/keyring", s.local(onCluster(fsm.RightOperator), s.keyring)).Methods(http.MethodGet)
	r.Handle("/v1/operator/keyring", s.local(onCluster(fsm.RightOperator), s.changeKeyring)).Methods(http.MethodPost)
	r.Handle("/v1/events", s.local(onPrefix(fsm.RightRead), s.events)).Methods(http.MethodGet) // each event checked in events
	r.Handle("/v1/status", s.local(anyToken, s.status)).Methods(http.MethodGet)
	r.Handle("/v1/members", s.local(anyToken, s.members)).Methods(http.MethodGet)
	r.HandleFunc("/healthz", s.healthz).Methods(http.MethodGet)
	r.HandleFunc("/readyz", s.readyz).Methods(http.MethodGet)
	r.HandleFunc("/v1/openapi.yaml", serveOpenAPI).Methods(http.MethodGet) // public documentation: no token
	metrics := onCluster(fsm.RightMetrics)
	if cfg.MetricsOpen {
		metrics = open
	}
	prom := promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{})
	r.Handle("/metrics", s.local(metrics, func(w http.ResponseWriter, r *http.Request) error {
		prom.ServeHTTP(w, r)
		return nil
	})).Methods(http.MethodGet)
	r.Handle("/v1/debug/pprof/{profile}", s.local(onCluster(fsm.RightDebug), s.profile)).Methods(http.MethodGet)
	r.Handle("/v1/debug/logs", s.local(onCluster(fsm.RightDebug), s.recentLogs)).Methods(http.MethodGet)
	// The page and its static files hold no data: its script reads the API
	// with the operator's token.
	r.HandleFunc("/ui", s.page).Methods(http.MethodGet)
	r.HandleFunc("/ui/static/{file}", s.uiAsset).Methods(http.MethodGet)
	r.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui", http.StatusFound)
	}).Methods(http.MethodGet)
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/leases/", "/v1/renew/", "/v1/revoke/", "/v1/controls/":
			// A route of one key, with the key left out.
			writeError(w, badRequest(wire.CodeInvalidKey, "key", "key is empty"))
			return
		}
		writeError(w, &apiError{code: wire.CodeNotFound, msg: "no route " + r.Method + " " + r.URL.Path})
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{status: http.StatusMethodNotAllowed, code: wire.CodeInvalidQuery, msg: "method " + r.Method + " not allowed on " + r.URL.Path})
	})
	s.handler = http.HandlerFunc(s.route)
	if cfg.Registerer != nil {
		m, err := newRequestMetrics(cfg.Registerer)
		if err != nil {
			return nil, fmt.Errorf("http metrics: %w", err)
		}
		if err := cfg.Registerer.Register(s.refused); err != nil {
			return nil, fmt.Errorf("http metrics: %w", err)
		}
		if s.admission != nil {
			if err := s.admission.register(cfg.Registerer); err != nil {
				return nil, fmt.Errorf("http metrics: %w", err)
			}
		}
		s.handler, s.metrics = m.instrument(r, s.handler), m
	}
	return s, nil
}

// ServeHTTP adds the leader header to every answer and bounds the body.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if addr := s.node.Replica.LeaderHTTPAddr(); addr != "" {
		w.Header().Set(wire.HeaderLeaderAddr, addr)
	}
	if bodyLimit(r) == wire.MaxSnapshotBytes {
		// A large body (a restore) may take longer than -http-read-timeout.
		rc := http.NewResponseController(w)
		rc.SetReadDeadline(time.Now().Add(cluster.RestoreTimeout))
		rc.SetWriteDeadline(time.Now().Add(cluster.RestoreTimeout + time.Minute))
	}
	r.Body = http.MaxBytesReader(w, r.Body, bodyLimit(r))
	s.handler.ServeHTTP(w, r)
}

// carriedRoute is a route of a call the request stream carries: its
// template (the route label of its metrics) and its handler.
type carriedRoute struct {
	template string
	keyed    bool // the template ends in "/{key:.+}"
	h        http.Handler
}

// carry registers the route of a call the request stream carries and
// keeps it for the stream, which serves a frame by its route (by method
// and path prefix) without the router's matching of every route.
func (s *Server) carry(method, template string, h http.Handler) {
	s.router.Handle(template, h).Methods(method)
	prefix, keyed := strings.CutSuffix(template, "{key:.+}")
	s.carried[method+" "+prefix] = carriedRoute{template: template, keyed: keyed, h: h}
}

// carriedRoute finds the route of a frame's call, and the key of a keyed
// route (escaped, as the router takes it from the escaped path): the
// route the router would match for it.
func (s *Server) carriedRoute(method, escapedPath string) (carriedRoute, string, bool) {
	if c, ok := s.carried[method+" "+escapedPath]; ok && !c.keyed {
		return c, "", true
	}
	i := strings.IndexByte(escapedPath[min(len(escapedPath), len("/v1/")):], '/')
	if i < 0 {
		return carriedRoute{}, "", false
	}
	prefix, key := escapedPath[:len("/v1/")+i+1], escapedPath[len("/v1/")+i+1:]
	c, ok := s.carried[method+" "+prefix]
	if !ok || !c.keyed || key == "" {
		return carriedRoute{}, "", false
	}
	return c, key, true
}

// serveCarried serves a frame's request r by its route c, as ServeHTTP
// and the router would: the leader header, the body limit, the query
// check, the request metrics.
func (s *Server) serveCarried(w *frameRecorder, r *http.Request, c carriedRoute) {
	start := time.Now()
	if addr := s.node.Replica.LeaderHTTPAddr(); addr != "" {
		w.Header().Set(wire.HeaderLeaderAddr, addr)
	}
	r.Body = http.MaxBytesReader(w, r.Body, bodyLimit(r))
	if err := checkQuery(r.URL.RawQuery); err != nil {
		writeError(w, err)
	} else {
		c.h.ServeHTTP(w, r)
	}
	if s.metrics != nil {
		s.metrics.observe(c.template, r.Method, w.status, time.Since(start))
	}
}

// route checks the query and hands the request to its route.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r.URL.RawQuery); err != nil {
		writeError(w, err)
		return
	}
	s.router.ServeHTTP(w, r)
}

// serveOpenAPI answers docs/openapi.yaml, the OpenAPI document of this API.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	w.Write(docs.OpenAPI)
}

// handlerFunc is a handler that reports its error for writeError.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// ServeHTTP runs h and answers its error.
func (h handlerFunc) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h(w, r); err != nil {
		writeError(w, err)
	}
}

// leader serves the request here when this node is the established leader
// and forwards it to the leader otherwise.
func (s *Server) leader(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.node.Replica.Ready() != nil {
			s.forward(w, r)
			return
		}
		s.admitted(w, r, h)
	})
}

// reader serves stale reads locally and linearizable ones like leader.
func (s *Server) reader(h handlerFunc) http.Handler {
	lead := s.leader(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if stale(r) {
			s.admitted(w, r, h)
			return
		}
		lead.ServeHTTP(w, r)
	})
}

func stale(r *http.Request) bool {
	v, ok := r.URL.Query()["stale"]
	return ok && (len(v) == 0 || v[0] == "" || v[0] == "true" || v[0] == "1")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(status)
	if l, ok := v.(*wire.LeaseInfo); ok {
		// The answer of most lease calls: its MarshalJSON writes it
		// compact, without reflection, and the encoder would only check
		// and copy it again (TestLeaseAnswersAsTheEncoderWritesThem).
		b, _ := l.MarshalJSON()
		w.Write(append(b, '\n'))
		return
	}
	if v != nil {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.Encode(v)
	}
}

// decodeOptionalBody is decodeBody for a body that may be left out: an
// empty body, with Content-Length 0 or chunked with nothing in it, leaves v
// as it is.
func decodeOptionalBody(r *http.Request, v any) error {
	br := bufio.NewReader(r.Body)
	if _, err := br.Peek(1); errors.Is(err, io.EOF) {
		return nil
	}
	r.Body = io.NopCloser(br) // the server closes the request's own body
	return decodeBody(r, v)
}

// decodeBody reads one JSON object into v: unknown fields, trailing data
// and bodies over their bodyLimit are errors that name the problem.
func decodeBody(r *http.Request, v any) error {
	raw, err := readBody(r)
	if err != nil {
		return err
	}
	return decodeRaw(raw, v)
}

// readAll reads the whole request body, within its bodyLimit, into one
// buffer of its declared length when it declares one within that limit:
// a 40 MB backup read through a growing buffer would cost copies twice
// its size again in fresh memory, which the process pays for in page
// faults while Raft's heartbeats wait.
func readAll(r *http.Request) ([]byte, error) {
	if r.ContentLength <= 0 || r.ContentLength > bodyLimit(r) {
		return io.ReadAll(r.Body)
	}
	// One byte more than declared, so that the end of the body is seen
	// in this read (a bytes.Buffer would take bytes.MinRead more, more
	// than a renewal's whole body).
	buf := make([]byte, r.ContentLength+1)
	n, err := io.ReadFull(r.Body, buf)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return buf[:n], nil
	case err != nil:
		return buf[:n], err
	}
	rest, err := io.ReadAll(r.Body) // longer than declared: within its limit still
	return append(buf, rest...), err
}

// readBody reads the whole request body, within its bodyLimit.
func readBody(r *http.Request) ([]byte, error) {
	raw, err := readAll(r)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, badRequest(wire.CodeBodyTooLarge, "body", fmt.Sprintf("body exceeds %d bytes", tooBig.Limit))
		}
		return nil, badRequest(wire.CodeInvalidBody, "body", "reading the body: "+err.Error())
	}
	return raw, nil
}

// decodeRaw decodes a JSON body into v strictly: every rule of
// checkStrict, no unknown field, one value and nothing after it.
func decodeRaw(raw []byte, v any) error {
	if err := checkStrict(raw, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			return badRequest(wire.CodeInvalidBody, "body", "body is empty, want a JSON object")
		case errors.As(err, &typeErr):
			// The code is the innermost field's: a string token inside a
			// bulk renewal ("leases.token") is invalid_token.
			field := typeErr.Field
			return badRequest(fieldCode(field[strings.LastIndexByte(field, '.')+1:]), field, fmt.Sprintf("%s: want a JSON %s, got %s", field, typeErr.Type, typeErr.Value))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return badRequest(wire.CodeInvalidBody, field, fmt.Sprintf("unknown field %q", field))
		}
		return badRequest(wire.CodeInvalidBody, "body", "body is not valid JSON: "+err.Error())
	}
	// Only whitespace may follow the object. (Decoder.More cannot tell:
	// it reports false before a stray '}' or ']'.)
	var extra json.RawMessage
	if err := dec.Decode(&extra); errors.Is(err, io.EOF) {
		return nil
	}
	return badRequest(wire.CodeInvalidBody, "body", "trailing data after the JSON object")
}

// parseDuration reads a Go duration string of field; empty gives def.
func parseDuration(field, s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		code := fieldCodes[field]
		return 0, badRequest(code, field, fmt.Sprintf("%s: %q is not a duration like \"10s\" or \"500ms\"", field, s))
	}
	if d < 0 {
		return 0, badRequest(fieldCodes[field], field, fmt.Sprintf("%s: %v is negative", field, d))
	}
	return d, nil
}

// writeCtx bounds a write's wait for Raft by the configured WriteTimeout.
func (s *Server) writeCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.cfg.WriteTimeout)
}

// write makes a change within the write timeout (writeCtx) and answers
// what it returns: 200 with it as JSON, or 204 for nil.
func (s *Server) write(w http.ResponseWriter, r *http.Request, change func(ctx context.Context) (any, error)) error {
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	out, err := change(ctx)
	switch {
	case err != nil:
		return err
	case out == nil:
		w.WriteHeader(http.StatusNoContent)
	default:
		writeJSON(w, http.StatusOK, out)
	}
	return nil
}

// matchedVar is a path variable as the route matched it (escaped): the
// router's, or a stream frame's key (frameKeyVar).
func matchedVar(r *http.Request, name string) string {
	if name == "key" {
		if v, ok := r.Context().Value(frameKeyVar{}).(string); ok {
			return v
		}
	}
	return mux.Vars(r)[name]
}

// jsonContentType is the value of a Content-Type header of JSON, shared:
// setting it so costs no allocation. Header.Add would copy it (its
// capacity is its length).
var jsonContentType = []string{"application/json"}

// pathVar is a path variable, unescaped (the router matches escaped paths,
// so that keys keep their slashes). A variable that is not valid escaping is
// returned as it is, and its validation names the problem.
func pathVar(r *http.Request, name string) string {
	v := matchedVar(r, name)
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}

// pathKey is the key of a lease route, unescaped like every path variable
// so that a key the rule refuses is reported as typed ("a b", not
// "a%20b"), except that a key with an escaped slash stays as sent: its
// "/" travels unescaped, and "%2F" is refused, never read as a second
// spelling of the same key.
func pathKey(r *http.Request) string {
	if v := matchedVar(r, "key"); strings.Contains(strings.ToUpper(v), "%2F") {
		return v
	}
	return pathVar(r, "key")
}
