//go:build linux

package netns

import (
	"encoding/binary"
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// nfnetlink_queue protocol, from linux/netfilter/nfnetlink_queue.h.
const (
	nfqnlMsgPacket  = 0
	nfqnlMsgVerdict = 1
	nfqnlMsgConfig  = 2

	nfqaPacketHdr  = 1 // struct nfqnl_msg_packet_hdr: __be32 packet_id, ...
	nfqaVerdictHdr = 2 // struct nfqnl_msg_verdict_hdr: __be32 verdict, __be32 id

	nfqaCfgCmd         = 1 // struct nfqnl_msg_config_cmd: __u8 command, __u8 pad, __be16 pf
	nfqaCfgParams      = 2 // struct nfqnl_msg_config_params: __be32 copy_range, __u8 copy_mode
	nfqaCfgQueueMaxlen = 3 // __be32
	nfqaCfgMask        = 4 // __be32
	nfqaCfgFlags       = 5 // __be32

	nfqnlCfgCmdBind  = 1
	nfqnlCopyMeta    = 1 // metadata only, no payload
	nfqaCfgFFailOpen = 1 // accept rather than drop when the queue is full
	nfqaCfgFGSO      = 4 // queue GSO packets whole; only metadata is read
	nfAccept         = 1
)

// nfqMsg encodes an nfnetlink_queue request: a netlink header, an nfgenmsg
// naming the queue, and the attributes.
func nfqMsg(msgType uint16, flags uint16, seq uint32, queue uint16, attrs ...[]byte) []byte {
	b := make([]byte, unix.NLMSG_HDRLEN, 64)
	ne := binary.NativeEndian
	ne.PutUint16(b[4:6], unix.NFNL_SUBSYS_QUEUE<<8|msgType)
	ne.PutUint16(b[6:8], unix.NLM_F_REQUEST|flags)
	ne.PutUint32(b[8:12], seq)
	b = append(b, unix.AF_UNSPEC, unix.NFNETLINK_V0)
	b = binary.BigEndian.AppendUint16(b, queue)
	for _, a := range attrs {
		b = append(b, a...)
	}
	ne.PutUint32(b[0:4], uint32(len(b)))
	return b
}

// nlAttr encodes one netlink attribute, padded to four bytes.
func nlAttr(typ uint16, parts ...[]byte) []byte {
	size := unix.NLA_HDRLEN
	for _, p := range parts {
		size += len(p)
	}
	b := make([]byte, unix.NLA_HDRLEN, nlAlign(size))
	binary.NativeEndian.PutUint16(b[0:2], uint16(size))
	binary.NativeEndian.PutUint16(b[2:4], typ)
	for _, p := range parts {
		b = append(b, p...)
	}
	return append(b, make([]byte, nlAlign(size)-size)...)
}

func nlAlign(n int) int { return (n + unix.NLA_ALIGNTO - 1) &^ (unix.NLA_ALIGNTO - 1) }

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// nlMsg is one received netlink message.
type nlMsg struct {
	typ     uint16
	seq     uint32
	payload []byte
}

// parseNlMsgs splits a datagram into its netlink messages, ignoring a
// truncated tail.
func parseNlMsgs(b []byte) []nlMsg {
	var msgs []nlMsg
	ne := binary.NativeEndian
	for len(b) >= unix.NLMSG_HDRLEN {
		size := int(ne.Uint32(b[0:4]))
		if size < unix.NLMSG_HDRLEN || size > len(b) {
			break
		}
		msgs = append(msgs, nlMsg{typ: ne.Uint16(b[4:6]), seq: ne.Uint32(b[8:12]), payload: b[unix.NLMSG_HDRLEN:size]})
		b = b[min(nlAlign(size), len(b)):]
	}
	return msgs
}

// err returns the error an NLMSG_ERROR message carries, nil for an
// acknowledgement.
func (m nlMsg) err() error {
	if len(m.payload) < 4 {
		return syscall.EBADMSG
	}
	if code := int32(binary.NativeEndian.Uint32(m.payload[0:4])); code != 0 {
		return syscall.Errno(-code)
	}
	return nil
}

// packet returns the queue and the id of a queued packet, from its
// nfgenmsg and its NFQA_PACKET_HDR.
func (m nlMsg) packet() (queue uint16, id uint32, ok bool) {
	if len(m.payload) < 4 { // struct nfgenmsg
		return 0, 0, false
	}
	queue = binary.BigEndian.Uint16(m.payload[2:4])
	a := m.payload[4:]
	for len(a) >= unix.NLA_HDRLEN {
		size := int(binary.NativeEndian.Uint16(a[0:2]))
		typ := binary.NativeEndian.Uint16(a[2:4]) &^ (unix.NLA_F_NESTED | unix.NLA_F_NET_BYTEORDER)
		if size < unix.NLA_HDRLEN || size > len(a) {
			return 0, 0, false
		}
		if typ == nfqaPacketHdr && size >= unix.NLA_HDRLEN+4 {
			return queue, binary.BigEndian.Uint32(a[4:8]), true
		}
		a = a[min(nlAlign(size), len(a)):]
	}
	return 0, 0, false
}

// send sends msg to the kernel.
func (d *delayer) send(msg []byte) error {
	var serr error
	err := d.rc.Write(func(fd uintptr) bool {
		serr = unix.Sendto(int(fd), msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		return serr != unix.EAGAIN
	})
	return errors.Join(err, serr)
}

// recv receives one datagram into buf, honouring the read deadline of
// d.f.
func (d *delayer) recv(buf []byte) ([]byte, error) {
	var n int
	var rerr error
	err := d.rc.Read(func(fd uintptr) bool {
		n, _, rerr = unix.Recvfrom(int(fd), buf, 0)
		return rerr != unix.EAGAIN
	})
	if err != nil {
		return nil, err
	}
	if rerr != nil {
		return nil, rerr
	}
	return buf[:n], nil
}
