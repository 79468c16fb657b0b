package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Every connection is a non-blocking socket in one level-triggered epoll set, served by one loop on one OS
// thread: per readiness one read() into a shared buffer, frames parsed in place, and whatever the turn produced
// (window updates, settings/ping acks) in one write(). With 1,000 connections a message often arrives alone,
// so the cost per message is about one read() plus a share of one epoll_wait() — no goroutine wake-ups, no
// EAGAIN reads, no per-message allocation. Only a frame cut by the end of a read is carried (copied) over.

const (
	frameHeader   = 9
	maxFrame      = 16384 // SETTINGS_MAX_FRAME_SIZE: the default, announced by the Node raw client too
	sharedReadBuf = 256 << 10

	frameData         = 0x0
	frameHeaders      = 0x1
	frameRSTStream    = 0x3
	frameSettings     = 0x4
	framePing         = 0x6
	frameGoAway       = 0x7
	frameContinuation = 0x9

	flagEndStream  = 0x1
	flagAck        = 0x1
	flagEndHeaders = 0x4
	flagPadded     = 0x8
	flagPriority   = 0x20
)

type stream struct {
	pending  []byte // a gRPC message split across DATA frames
	messages uint64
	unacked  uint32 // bytes consumed since the last WINDOW_UPDATE
	done     bool
}

type conn struct {
	fd          int
	carry       []byte // the start of a frame cut by the end of the last read
	out         []byte // frames to write at the end of this turn
	streams     []*stream
	connUnacked uint32
	dec         *hpack.Decoder
	// A header block in progress (HEADERS then CONTINUATION until END_HEADERS).
	hdrStream    uint32
	hdrEndStream bool
	grpcStatus   string
	grpcMessage  string
	closed       bool
	stalled      bool // in `stalled`: out has bytes a write could not take
}

// stalled: connections whose last flush hit EAGAIN, retried after every turn of the loop.
var stalled []*conn

func sockaddr(addr string) (int, syscall.Sockaddr, error) {
	a, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return 0, nil, err
	}
	if ip4 := a.IP.To4(); ip4 != nil {
		sa := &syscall.SockaddrInet4{Port: a.Port}
		copy(sa.Addr[:], ip4)
		return syscall.AF_INET, sa, nil
	}
	sa := &syscall.SockaddrInet6{Port: a.Port}
	copy(sa.Addr[:], a.IP.To16())
	return syscall.AF_INET6, sa, nil
}

// dial connects (blocking), sends the preface, settings, connection window and every stream's HEADERS + DATA,
// then makes the socket non-blocking for the loop.
func dial(addr, path string, reqs [][]byte) (*conn, error) {
	family, sa, err := sockaddr(addr)
	if err != nil {
		return nil, err
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := syscall.Connect(fd, sa); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("connect %s: %w", addr, err)
	}
	_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
	var w bytes.Buffer
	w.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&w, nil)
	_ = fr.WriteSettings(http2.Setting{ID: http2.SettingEnablePush, Val: 0}, http2.Setting{ID: http2.SettingInitialWindowSize, Val: streamWindow})
	_ = fr.WriteWindowUpdate(0, connWindow-65535)
	var hbuf bytes.Buffer
	henc := hpack.NewEncoder(&hbuf)
	c := &conn{fd: fd}
	for k, req := range reqs {
		id := uint32(1 + 2*k)
		hbuf.Reset()
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", addr}, {":path", path}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
			_ = henc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		if acceptEnc != "" {
			_ = henc.WriteField(hpack.HeaderField{Name: "grpc-accept-encoding", Value: acceptEnc})
		}
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hbuf.Bytes(), EndHeaders: true})
		_ = fr.WriteData(id, false, req)
		c.streams = append(c.streams, &stream{})
	}
	for b := w.Bytes(); len(b) > 0; {
		n, err := syscall.Write(fd, b)
		if err != nil {
			syscall.Close(fd)
			return nil, err
		}
		b = b[n:]
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	c.dec = hpack.NewDecoder(4096, func(f hpack.HeaderField) {
		switch f.Name {
		case "grpc-status":
			c.grpcStatus = f.Value
		case "grpc-message":
			c.grpcMessage = f.Value
		case ":status":
			if f.Value != "200" {
				noteStatus(":status " + f.Value)
			}
		}
	})
	return c, nil
}

func (c *conn) stream(id uint32) *stream {
	if id == 0 || id%2 == 0 || int((id-1)/2) >= len(c.streams) {
		return nil
	}
	return c.streams[(id-1)/2]
}

func (s *stream) end() {
	if !s.done {
		s.done = true
		ended.Add(1)
	}
}

func (c *conn) close(why string) {
	if c.closed {
		return
	}
	c.closed = true
	connErrors.Add(1)
	for _, s := range c.streams {
		s.end()
	}
	if why != "" {
		noteStatus("connection: " + why)
	}
	syscall.Close(c.fd) // also leaves the epoll set
}

func appendFrameHeader(b []byte, length int, typ, flags byte, id uint32) []byte {
	return append(b, byte(length>>16), byte(length>>8), byte(length), typ, flags, byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
}

func (c *conn) windowUpdate(id, n uint32) {
	c.out = appendFrameHeader(c.out, 4, 0x8, 0, id)
	c.out = binary.BigEndian.AppendUint32(c.out, n)
}

// gunzip: one reader and buffer reused for every compressed message (the loop is single-threaded).
var (
	gz      *gzip.Reader
	gzSrc   bytes.Reader
	gzOut   bytes.Buffer
	gzError bool
)

func gunzip(m []byte) ([]byte, bool) {
	gzSrc.Reset(m)
	var err error
	if gz == nil {
		gz, err = gzip.NewReader(&gzSrc)
	} else {
		err = gz.Reset(&gzSrc)
	}
	if err != nil {
		return nil, false
	}
	gz.Multistream(false)
	gzOut.Reset()
	if _, err := io.Copy(&gzOut, gz); err != nil {
		return nil, false
	}
	return gzOut.Bytes(), true
}

func (c *conn) onMessage(s *stream, flag byte, m []byte, now float64) {
	if flag == 1 {
		switch acceptEnc {
		case "gzip":
			plain, ok := gunzip(m)
			if !ok {
				if !gzError {
					gzError = true
					noteStatus("a gzip message did not decode")
				}
				return
			}
			m = plain
		case "zstd":
			// No zstd in Go's standard library: a compressed message is a transaction (the server compresses
			// nothing smaller), counted without its stamp.
			s.messages++
			messages.Add(1)
			received.Add(1)
			return
		}
	}
	s.messages++
	messages.Add(1)
	if s.messages == 1 && pongs.Add(1) == totalStr {
		emit(map[string]any{"type": "ready", "streams": totalStr})
	}
	if t, ok := publishStamp(m); ok {
		received.Add(1)
		if recording.Load() {
			record(now - t)
		}
	}
}

// onData cuts a DATA frame's payload at the gRPC length prefixes; only a message split across frames is copied.
func (c *conn) onData(s *stream, data []byte, now float64) error {
	for len(data) > 0 && len(s.pending) > 0 {
		if len(s.pending) < prefixSize {
			n := min(prefixSize-len(s.pending), len(data))
			s.pending = append(s.pending, data[:n]...)
			data = data[n:]
			continue
		}
		total := prefixSize + int(binary.BigEndian.Uint32(s.pending[1:prefixSize]))
		n := min(total-len(s.pending), len(data))
		s.pending = append(s.pending, data[:n]...)
		data = data[n:]
		if len(s.pending) == total {
			c.onMessage(s, s.pending[0], s.pending[prefixSize:], now)
			s.pending = s.pending[:0]
		}
	}
	for len(data) >= prefixSize {
		l := binary.BigEndian.Uint32(data[1:prefixSize])
		if l > maxMessage {
			return fmt.Errorf("message of %d bytes", l)
		}
		total := prefixSize + int(l)
		if len(data) < total {
			break
		}
		c.onMessage(s, data[0], data[prefixSize:total], now)
		data = data[total:]
	}
	if len(data) > 0 {
		s.pending = append(s.pending[:0], data...)
	}
	return nil
}

// frame handles one whole frame (header h, payload p).
func (c *conn) frame(typ, flags byte, id uint32, p []byte, now float64) error {
	if c.hdrStream != 0 && typ != frameContinuation {
		return errors.New("header block interrupted")
	}
	switch typ {
	case frameData:
		n := uint32(len(p))
		if flags&flagPadded != 0 {
			if len(p) < 1 || int(p[0]) >= len(p) {
				return errors.New("bad DATA padding")
			}
			p = p[1 : len(p)-int(p[0])]
		}
		dataBytes.Add(uint64(len(p)))
		if s := c.stream(id); s != nil {
			if err := c.onData(s, p, now); err != nil {
				return err
			}
			if flags&flagEndStream != 0 {
				s.end()
			} else if s.unacked += n; s.unacked >= streamWindow/2 {
				c.windowUpdate(id, s.unacked)
				s.unacked = 0
			}
		}
		if c.connUnacked += n; c.connUnacked >= connWindow/2 {
			c.windowUpdate(0, c.connUnacked)
			c.connUnacked = 0
		}
	case frameHeaders:
		if flags&flagPadded != 0 {
			if len(p) < 1 || int(p[0]) >= len(p) {
				return errors.New("bad HEADERS padding")
			}
			p = p[1 : len(p)-int(p[0])]
		}
		if flags&flagPriority != 0 {
			if len(p) < 5 {
				return errors.New("short HEADERS priority")
			}
			p = p[5:]
		}
		c.hdrStream, c.hdrEndStream, c.grpcStatus, c.grpcMessage = id, flags&flagEndStream != 0, "", ""
		return c.headerBlock(p, flags&flagEndHeaders != 0)
	case frameContinuation:
		if c.hdrStream == 0 || id != c.hdrStream {
			return errors.New("unexpected CONTINUATION")
		}
		return c.headerBlock(p, flags&flagEndHeaders != 0)
	case frameRSTStream:
		if len(p) == 4 {
			noteStatus("RST_STREAM " + http2.ErrCode(binary.BigEndian.Uint32(p)).String())
		}
		if s := c.stream(id); s != nil {
			s.end()
		}
	case frameSettings:
		if flags&flagAck == 0 {
			c.out = appendFrameHeader(c.out, 0, frameSettings, flagAck, 0)
		}
	case framePing:
		if flags&flagAck == 0 && len(p) == 8 {
			c.out = appendFrameHeader(c.out, 8, framePing, flagAck, 0)
			c.out = append(c.out, p...)
		}
	case frameGoAway:
		if len(p) >= 8 {
			noteStatus("GOAWAY " + http2.ErrCode(binary.BigEndian.Uint32(p[4:8])).String())
		}
	}
	return nil
}

func (c *conn) headerBlock(fragment []byte, end bool) error {
	if _, err := c.dec.Write(fragment); err != nil {
		return err
	}
	if !end {
		return nil
	}
	if err := c.dec.Close(); err != nil {
		return err
	}
	if c.hdrEndStream {
		if c.grpcStatus != "0" {
			noteStatus(fmt.Sprintf("grpc-status %s: %s", c.grpcStatus, c.grpcMessage))
		}
		if s := c.stream(c.hdrStream); s != nil {
			s.end()
		}
	}
	c.hdrStream = 0
	return nil
}

// onReadable reads once into buf (after the carried partial frame), handles every whole frame, carries the rest.
func (c *conn) onReadable(buf []byte) {
	k := copy(buf, c.carry)
	n, err := rawRead(c.fd, buf[k:])
	if err == syscall.EAGAIN || err == syscall.EINTR {
		return
	}
	if err != nil {
		c.close(err.Error())
		return
	}
	if n == 0 {
		c.close("")
		return
	}
	now := nowMs()
	b := buf[:k+n]
	for len(b) >= frameHeader {
		length := int(b[0])<<16 | int(b[1])<<8 | int(b[2])
		if length > maxFrame {
			c.close(fmt.Sprintf("frame of %d bytes", length))
			return
		}
		if len(b) < frameHeader+length {
			break
		}
		id := binary.BigEndian.Uint32(b[5:9]) & 0x7fffffff
		if err := c.frame(b[3], b[4], id, b[frameHeader:frameHeader+length], now); err != nil {
			c.close(err.Error())
			return
		}
		b = b[frameHeader+length:]
	}
	c.carry = append(c.carry[:0], b...)
	c.flush()
}

func (c *conn) flush() {
	for len(c.out) > 0 {
		n, err := rawWrite(c.fd, c.out)
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN { // tiny control frames; the socket drains and a later turn writes the rest
			if !c.stalled {
				c.stalled = true
				stalled = append(stalled, c)
			}
			return
		}
		if err != nil {
			c.close(err.Error())
			return
		}
		c.out = c.out[:copy(c.out, c.out[n:])]
	}
}

// The loop's syscalls bypass the Go scheduler's syscall bookkeeping (entersyscall/exitsyscall and sysmon
// handing the P to another thread when epoll_wait blocks), which cost more than the read itself: the loop owns
// its locked OS thread and the process has a second P for the command reader.
func rawRead(fd int, b []byte) (int, error) {
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func rawWrite(fd int, b []byte) (int, error) {
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func rawEpollWait(ep int, events []syscall.EpollEvent, timeoutMs int) (int, error) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(ep), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(timeoutMs), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// serve runs the loop over every connection on this (locked) OS thread; it never returns.
func serve(cs []*conn) error {
	runtime.LockOSThread()
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	maxFd := 0
	for _, c := range cs {
		maxFd = max(maxFd, c.fd)
	}
	byFd := make([]*conn, maxFd+1) // fds are small integers: a slice, not a map, on the per-event path
	for _, c := range cs {
		byFd[c.fd] = c
		if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, c.fd, &syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(c.fd)}); err != nil {
			return err
		}
	}
	events := make([]syscall.EpollEvent, 256)
	buf := make([]byte, maxFrame+frameHeader+sharedReadBuf)
	for {
		n, err := rawEpollWait(ep, events, 200)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			if c := byFd[events[i].Fd]; c != nil && !c.closed {
				c.onReadable(buf)
			}
		}
		if len(stalled) > 0 {
			retry := stalled
			stalled = nil
			for _, c := range retry {
				c.stalled = false
				if !c.closed {
					c.flush()
				}
			}
		}
	}
}
