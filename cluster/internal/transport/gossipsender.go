package transport

import (
	"bytes"
	"compress/lzw"
	"encoding/json"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster/internal/limitedlog"
)

// Senders names the members behind the gossip stream connections that
// memberlist is about to refuse because they are not encrypted while the
// server's gossip is (a worker or server started without the gossip key):
// memberlist's own line names only the connection's source port, a port
// the member does not gossip on. The transport reads the plain-text state
// such a stream opens with (its sender's node name, gossip address and
// role) before memberlist does; an entry lasts while its connection is
// open, so the caps on inbound streams bound it. Its methods are safe for
// concurrent use.
type Senders struct {
	mu sync.Mutex
	m  map[string]limitedlog.Member // by remote address
}

// NewSenders returns an empty Senders.
func NewSenders() *Senders { return &Senders{m: map[string]limitedlog.Member{}} }

// Of is the member that sent the open stream from addr (its remote
// address, as memberlist logs it after "from="), as its state says: its
// node name, the gossip address it announces, and its role (from its
// metadata; "" when it announces none). A stranger chose every field.
// False when unknown (an encrypted stream, or one whose state names no
// single sender).
func (s *Senders) Of(addr string) (limitedlog.Member, bool) {
	if s == nil {
		return limitedlog.Member{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	who, ok := s.m[addr]
	return who, ok
}

func (s *Senders) set(addr string, who limitedlog.Member) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[addr] = who
}

func (s *Senders) forget(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, addr)
}

// memberlist's stream message types (its net.go): a plain state exchange,
// and a compressed message (members that compress: memberlist's default,
// not tenure's).
const (
	msgPushPull = 6
	msgCompress = 9
)

// maxSenderPeek bounds the bytes read ahead of memberlist to name a
// sender; a joining member's state is a few hundred.
const maxSenderPeek = 16 << 10

// senderPeekWait bounds the wait for the rest of a plain stream's state,
// once its first byte has come.
const senderPeekWait = 500 * time.Millisecond

// peekSender reads the start of c, a stream memberlist will refuse if it
// is not encrypted, and, when it is a plain state exchange, records its
// sender in s until the connection closes. It returns c with what it read
// put back in front, for memberlist to read again.
func (s *Senders) peekSender(c net.Conn, timeout time.Duration) net.Conn {
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	defer func() { _ = c.SetReadDeadline(time.Time{}) }()
	buf := make([]byte, 1, 4096)
	if _, err := io.ReadFull(c, buf); err != nil {
		return c // memberlist meets the same end of the stream
	}
	if buf[0] != msgPushPull && buf[0] != msgCompress { // encrypted (or nothing a join sends)
		return &peekedConn{Conn: c, r: io.MultiReader(bytes.NewReader(buf), c)}
	}
	var who limitedlog.Member
	ok := false
	for tries := 0; !ok && len(buf) < maxSenderPeek && tries < 4; tries++ {
		if tries > 0 {
			_ = c.SetReadDeadline(time.Now().Add(senderPeekWait))
		}
		n, err := c.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		who, ok = plainSender(buf, c.RemoteAddr())
		if err != nil {
			break
		}
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, len(buf))...)[:len(buf)]
		}
	}
	p := &peekedConn{Conn: c, r: io.MultiReader(bytes.NewReader(buf), c)}
	if ok {
		p.senders, p.addr = s, c.RemoteAddr().String()
		s.set(p.addr, who)
	}
	return p
}

// pushNodeState is memberlist's state of one node in a state exchange.
type pushNodeState struct {
	Name string
	Addr []byte
	Port uint16
	Meta []byte
}

// plainSender names the sender of a plain state exchange b (its type
// byte first, compressed or not): the one node it lists, or the one of its
// nodes at from's IP; false if b is incomplete or names no single sender.
func plainSender(b []byte, from net.Addr) (limitedlog.Member, bool) {
	if len(b) > 0 && b[0] == msgCompress {
		var c struct {
			Algo int
			Buf  []byte
		}
		if codec.NewDecoderBytes(b[1:], &codec.MsgpackHandle{}).Decode(&c) != nil || c.Algo != 0 { // 0: LZW
			return limitedlog.Member{}, false
		}
		r := lzw.NewReader(bytes.NewReader(c.Buf), lzw.LSB, 8)
		defer r.Close()
		var err error
		if b, err = io.ReadAll(io.LimitReader(r, maxSenderPeek)); err != nil {
			return limitedlog.Member{}, false
		}
	}
	if len(b) == 0 || b[0] != msgPushPull {
		return limitedlog.Member{}, false
	}
	var header struct {
		Nodes int
	}
	dec := codec.NewDecoderBytes(b[1:], &codec.MsgpackHandle{})
	if dec.Decode(&header) != nil || header.Nodes < 1 || header.Nodes > 1024 {
		return limitedlog.Member{}, false
	}
	var found *pushNodeState
	fromIP := ""
	if a, ok := from.(*net.TCPAddr); ok {
		fromIP = a.IP.String()
	}
	for i := 0; i < header.Nodes; i++ {
		var n pushNodeState
		if dec.Decode(&n) != nil {
			return limitedlog.Member{}, false
		}
		if header.Nodes == 1 || net.IP(n.Addr).String() == fromIP {
			if found != nil {
				return limitedlog.Member{}, false // two at the sender's IP: cannot tell which
			}
			found = &n
		}
	}
	if found == nil {
		return limitedlog.Member{}, false
	}
	var meta wire.MemberMeta
	_ = json.Unmarshal(found.Meta, &meta)
	return limitedlog.Member{Name: found.Name, Addr: net.JoinHostPort(net.IP(found.Addr).String(), strconv.Itoa(int(found.Port))), Role: meta.Role}, true
}

// peekedConn is a stream with the bytes read ahead of memberlist put
// back; it forgets its sender when closed.
type peekedConn struct {
	net.Conn
	r       io.Reader
	senders *Senders
	addr    string
	once    sync.Once
}

func (p *peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }

func (p *peekedConn) Close() error {
	if p.senders != nil {
		p.once.Do(func() { p.senders.forget(p.addr) })
	}
	return p.Conn.Close()
}
