//go:build linux

package netns

import (
	"bytes"
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

func TestNetlinkEncoding(t *testing.T) {
	a := nlAttr(nfqaCfgParams, be32(0), []byte{nfqnlCopyMeta})
	if len(a) != 12 || binary.NativeEndian.Uint16(a[0:2]) != 9 || a[8] != nfqnlCopyMeta {
		t.Fatalf("params attribute % x: want length 9 padded to 12", a)
	}
	msg := nfqMsg(nfqnlMsgVerdict, 0, 7, 513, nlAttr(nfqaVerdictHdr, be32(nfAccept), be32(42)))
	if got := binary.NativeEndian.Uint32(msg[0:4]); int(got) != len(msg) || len(msg) != 32 {
		t.Fatalf("message length %d in header, %d bytes: want 32", got, len(msg))
	}
	if !bytes.Equal(msg[16:20], []byte{unix.AF_UNSPEC, unix.NFNETLINK_V0, 2, 1}) {
		t.Fatalf("nfgenmsg % x: want queue 513 big-endian", msg[16:20])
	}
	// A queued packet as the kernel sends it: the header of msg, and an
	// NFQA_PACKET_HDR, followed by an NLMSG_ERROR acknowledging seq 7.
	pkt := nfqMsg(nfqnlMsgPacket, 0, 0, 513, nlAttr(nfqaPacketHdr|unix.NLA_F_NET_BYTEORDER, be32(42), []byte{8, 0, 3}))
	ack := make([]byte, unix.NLMSG_HDRLEN+4+unix.NLMSG_HDRLEN)
	binary.NativeEndian.PutUint32(ack[0:4], uint32(len(ack)))
	binary.NativeEndian.PutUint16(ack[4:6], unix.NLMSG_ERROR)
	binary.NativeEndian.PutUint32(ack[8:12], 7)
	msgs := parseNlMsgs(append(append(pkt, ack...), 1, 2, 3))
	if len(msgs) != 2 {
		t.Fatalf("parsed %d messages, want 2", len(msgs))
	}
	if queue, id, ok := msgs[0].packet(); !ok || queue != 513 || id != 42 {
		t.Errorf("packet: queue %d, id %d, %v; want 513, 42", queue, id, ok)
	}
	if msgs[1].typ != unix.NLMSG_ERROR || msgs[1].seq != 7 || msgs[1].err() != nil {
		t.Errorf("acknowledgement %+v: want NLMSG_ERROR 0 for seq 7", msgs[1])
	}
	binary.NativeEndian.PutUint32(msgs[1].payload[0:4], uint32(0xffffffff)-uint32(unix.EBUSY)+1)
	if err := msgs[1].err(); err != unix.EBUSY {
		t.Errorf("error %v, want EBUSY", err)
	}
}
