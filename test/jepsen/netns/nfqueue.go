//go:build linux

package netns

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

const (
	// queueMaxLen bounds the packets held per queue; beyond it the kernel
	// lets packets through undelayed (fail-open).
	queueMaxLen = 8192
	// probeQueue is the queue number the probe of DelaySupported binds.
	probeQueue = 65535
	// drainTime is how long stop keeps reading the socket, releasing at
	// once whatever arrives. Packets still queued when the socket closes
	// are dropped by the kernel.
	drainTime = 20 * time.Millisecond
)

// A delayer holds back the packets queued to it in one namespace. It
// serves one netfilter queue per shaped source node, numbered after the
// node, and accepts each packet Delay±Jitter after it arrived, never
// before a packet of the same queue that arrived earlier.
type delayer struct {
	ns  string
	log hclog.Logger
	f   *os.File
	rc  syscall.RawConn

	mu    sync.Mutex
	flows map[uint16]*flow // by queue number
	acks  map[uint32]chan error
	seq   uint32

	pending      chan held
	flush        chan struct{} // closed by stop: release everything now
	readerDone   chan struct{}
	releaserDone chan struct{}
	stopOnce     sync.Once

	queued, released, failed atomic.Uint64
}

type flow struct {
	delay, jitter time.Duration
	last          time.Time // due time of the latest packet
}

type held struct {
	queue uint16
	id    uint32
	due   time.Time
	seq   uint64 // arrival order, breaks ties of due
}

// startDelayer opens a netfilter queue socket in namespace ns and starts
// serving it; setQueue binds queues to it.
func startDelayer(ns string, log hclog.Logger) (*delayer, error) {
	var fd int
	err := inNamespace(ns, func() error {
		var err error
		fd, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_NETFILTER)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("nfqueue socket in %s: %w", ns, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("nfqueue socket in %s: bind: %w", ns, err)
	}
	// Best effort: room for many queued packets; an overflow lets packets
	// through (fail-open) rather than reporting ENOBUFS.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_NO_ENOBUFS, 1)
	f := os.NewFile(uintptr(fd), "nfqueue")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("nfqueue socket in %s: %w", ns, err)
	}
	d := &delayer{
		ns:           ns,
		log:          log,
		f:            f,
		rc:           rc,
		flows:        make(map[uint16]*flow),
		acks:         make(map[uint32]chan error),
		pending:      make(chan held, queueMaxLen),
		flush:        make(chan struct{}),
		readerDone:   make(chan struct{}),
		releaserDone: make(chan struct{}),
	}
	go d.read()
	go d.release()
	return d, nil
}

// setQueue sets the delay of the packets queued to queue from now on,
// binding queue to d first if needed: metadata only, fail-open, GSO
// packets unsegmented.
func (d *delayer) setQueue(queue uint16, delay, jitter time.Duration) error {
	d.mu.Lock()
	if fl := d.flows[queue]; fl != nil {
		fl.delay, fl.jitter = delay, jitter
		d.mu.Unlock()
		return nil
	}
	d.seq++
	seq, ack := d.seq, make(chan error, 1)
	d.acks[seq] = ack
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.acks, seq)
		d.mu.Unlock()
	}()
	msg := nfqMsg(nfqnlMsgConfig, unix.NLM_F_ACK, seq, queue,
		nlAttr(nfqaCfgCmd, []byte{nfqnlCfgCmdBind, 0, 0, 0}),
		nlAttr(nfqaCfgParams, be32(0), []byte{nfqnlCopyMeta}),
		nlAttr(nfqaCfgQueueMaxlen, be32(queueMaxLen)),
		nlAttr(nfqaCfgMask, be32(nfqaCfgFFailOpen|nfqaCfgFGSO)),
		nlAttr(nfqaCfgFlags, be32(nfqaCfgFFailOpen|nfqaCfgFGSO)))
	if err := d.send(msg); err != nil {
		return fmt.Errorf("bind nfqueue %d in %s: %w", queue, d.ns, err)
	}
	select {
	case err := <-ack:
		if err != nil {
			return fmt.Errorf("bind nfqueue %d in %s: %w", queue, d.ns, err)
		}
	case <-time.After(2 * time.Second):
		return fmt.Errorf("bind nfqueue %d in %s: no acknowledgement", queue, d.ns)
	}
	d.mu.Lock()
	d.flows[queue] = &flow{delay: delay, jitter: jitter}
	d.mu.Unlock()
	return nil
}

// read receives queued packets and acknowledgements until stop.
func (d *delayer) read() {
	defer close(d.readerDone)
	defer close(d.pending)
	buf := make([]byte, 65536)
	var arrivals uint64
	fails := 0
	for {
		b, err := d.recv(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, os.ErrClosed) {
			return
		}
		if err != nil {
			if fails++; fails == 1 || fails%1000 == 0 {
				d.log.Warn("nfqueue receive failed", "namespace", d.ns, "error", err, "failures", fails)
			}
			time.Sleep(time.Millisecond)
			continue
		}
		fails = 0
		for _, m := range parseNlMsgs(b) {
			switch m.typ {
			case unix.NFNL_SUBSYS_QUEUE<<8 | nfqnlMsgPacket:
				queue, id, ok := m.packet()
				if !ok {
					continue
				}
				arrivals++
				d.queued.Add(1)
				d.pending <- held{queue: queue, id: id, due: d.due(queue), seq: arrivals}
			case unix.NLMSG_ERROR:
				d.mu.Lock()
				ack := d.acks[m.seq]
				d.mu.Unlock()
				if err := m.err(); ack != nil {
					ack <- err
				} else if err != nil {
					d.failed.Add(1)
					d.log.Warn("nfqueue verdict rejected", "namespace", d.ns, "error", err)
				}
			}
		}
	}
}

// due returns when a packet of queue arriving now may go: Delay plus a
// uniform jitter in [-Jitter, +Jitter], not before the previous packet of
// the queue.
func (d *delayer) due(queue uint16) time.Time {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	fl := d.flows[queue]
	if fl == nil {
		return now
	}
	delay := fl.delay
	if j := int64(fl.jitter); j > 0 {
		delay += time.Duration(rand.Int64N(2*j+1) - j)
	}
	due := now.Add(max(delay, 0))
	if due.Before(fl.last) {
		due = fl.last
	}
	fl.last = due
	return due
}

// release accepts each packet when it is due, or at once after stop.
func (d *delayer) release() {
	defer close(d.releaserDone)
	var h heldHeap
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	in, flush, flushing := d.pending, d.flush, false
	for in != nil || h.Len() > 0 {
		for h.Len() > 0 && (flushing || !h[0].due.After(time.Now())) {
			d.accept(heap.Pop(&h).(held))
		}
		var wake <-chan time.Time
		if h.Len() > 0 {
			timer.Reset(time.Until(h[0].due))
			wake = timer.C
		}
		select {
		case p, ok := <-in:
			if !ok {
				in = nil
				flushing = true
				continue
			}
			heap.Push(&h, p)
		case <-wake:
		case <-flush:
			flush, flushing = nil, true
		}
	}
}

func (d *delayer) accept(p held) {
	msg := nfqMsg(nfqnlMsgVerdict, 0, 0, p.queue, nlAttr(nfqaVerdictHdr, be32(nfAccept), be32(p.id)))
	if err := d.send(msg); err != nil {
		if d.failed.Add(1) == 1 {
			d.log.Warn("nfqueue verdict failed", "namespace", d.ns, "error", err)
		}
		return
	}
	d.released.Add(1)
}

// stop releases every held packet at once, keeps doing so for drainTime,
// then closes the socket, which unbinds the queues. Idempotent.
func (d *delayer) stop() {
	d.stopOnce.Do(func() {
		close(d.flush)
		if err := d.f.SetReadDeadline(time.Now().Add(drainTime)); err != nil {
			d.f.Close()
		}
		<-d.readerDone
		<-d.releaserDone
		d.f.Close()
	})
}

func (d *delayer) stats() string {
	return fmt.Sprintf("%d packets queued, %d released, %d failures",
		d.queued.Load(), d.released.Load(), d.failed.Load())
}

// heldHeap orders held packets by due time, then arrival.
type heldHeap []held

func (h heldHeap) Len() int { return len(h) }
func (h heldHeap) Less(i, j int) bool {
	if h[i].due.Equal(h[j].due) {
		return h[i].seq < h[j].seq
	}
	return h[i].due.Before(h[j].due)
}
func (h heldHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *heldHeap) Push(x any)   { *h = append(*h, x.(held)) }
func (h *heldHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	*h = old[:len(old)-1]
	return p
}
