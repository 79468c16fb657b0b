// fanout-loadclient: the fanout benchmark's load client, compiled, so the fanout's figures are the fanout's.
//
// It opens -conns h2c connections (HTTP/2 with prior knowledge) to -addr and one Subscribe stream per gRPC
// frame in -requests (stream i on connection i % conns, as test/fanout/raw-client.ts spreads them), sends each
// stream its frame (no END_STREAM: the stream stays open), then reads: it cuts the byte stream at the gRPC length
// prefixes, counts every message, and takes the publish stamp out of signatures[0] exactly as publishStamp() in
// test/bench/fanout.ts does, recording (now - stamp) into a fixed-size histogram while recording is on.
//
// Raw framing (http2.Framer + hpack), one goroutine per connection that both reads and writes (window updates,
// settings/ping acks), 64 KiB reads, no per-message allocation. Commands on stdin, one JSON line per answer on
// stdout (README.md has the protocol). Stdin closing ends the process.
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

const (
	prefixSize = 5
	// Flow control as the Node raw client announces it: 1 MiB per stream, 16 MiB per connection; a window
	// update once half of a window has been consumed (what nghttp2 does).
	streamWindow = 1 << 20
	connWindow   = 16 << 20
	readBuffer   = 64 << 10
	// A response larger than this is a broken stream, not a message.
	maxMessage = 64 << 20
	// Latency histogram: 10 µs buckets up to 10 s, the last bucket holds everything above.
	bucketMs   = 0.01
	numBuckets = 1_000_000
)

// stampOff: where the publish stamp sits inside signatures[0] (STAMP_OFF in test/bench/fanout-workload.ts).
const stampOff = 0

var (
	received   atomic.Uint64 // messages carrying a publish stamp (transactions)
	messages   atomic.Uint64 // every message (pongs, pings, slots too)
	pongs      atomic.Int64  // streams that got their first message
	ended      atomic.Int64  // streams closed by trailers or RST_STREAM
	connErrors atomic.Int64
	recording  atomic.Bool
	samples    atomic.Uint64
	maxMicros  atomic.Int64
	hist       = make([]atomic.Uint32, numBuckets)
	totalStr   int64
	statusMu   sync.Mutex
	lastStatus string // the last non-OK grpc-status / error seen, for the stats line
	outMu      sync.Mutex
	out        = bufio.NewWriter(os.Stdout)
)

func emit(v map[string]any) {
	b, _ := json.Marshal(v)
	outMu.Lock()
	out.Write(b)
	out.WriteByte('\n')
	out.Flush()
	outMu.Unlock()
}

func noteStatus(s string) {
	statusMu.Lock()
	lastStatus = s
	statusMu.Unlock()
}

// nowMs: Unix epoch milliseconds as a float, the clock of nowMs() in fanout-workload.ts.
func nowMs() float64 {
	return float64(time.Now().UnixNano()) / 1e6
}

// publishStamp is publishStamp() of test/bench/fanout.ts: SubscribeResponse bytes -> the f64 stamp at the start
// of signatures[0] (field 6) of the transaction (field 3), or false (pongs, pings, slots). Bounds-checked.
func publishStamp(b []byte) (float64, bool) {
	o := 0
	varint := func() (uint64, bool) {
		var v uint64
		var s uint
		for o < len(b) {
			x := b[o]
			o++
			v |= uint64(x&0x7f) << s
			if x < 0x80 {
				return v, true
			}
			s += 7
			if s > 63 {
				return 0, false
			}
		}
		return 0, false
	}
	for o < len(b) {
		tag := b[o]
		o++
		if tag&7 == 0 {
			if _, ok := varint(); !ok {
				return 0, false
			}
			continue
		}
		l, ok := varint()
		if !ok || l > uint64(len(b)-o) {
			return 0, false
		}
		if tag != 0x1a {
			o += int(l)
			continue
		}
		end := o + int(l) // the transaction: find field 6 (signatures), first occurrence
		for o < end {
			t := b[o]
			o++
			if t&7 == 0 {
				if _, ok := varint(); !ok {
					return 0, false
				}
				continue
			}
			l2, ok := varint()
			if !ok {
				return 0, false
			}
			if t == 0x32 {
				if o+stampOff+8 > len(b) {
					return 0, false
				}
				return math.Float64frombits(binary.LittleEndian.Uint64(b[o+stampOff:])), true
			}
			o += int(l2)
		}
		return 0, false
	}
	return 0, false
}

func record(ms float64) {
	i := int(ms / bucketMs)
	if i < 0 || ms != ms {
		i = 0
	} else if i >= numBuckets {
		i = numBuckets - 1
	}
	hist[i].Add(1)
	samples.Add(1)
	us := int64(ms * 1000)
	for {
		m := maxMicros.Load()
		if us <= m || maxMicros.CompareAndSwap(m, us) {
			return
		}
	}
}

func resetHistogram() {
	for i := range hist {
		hist[i].Store(0)
	}
	samples.Store(0)
	maxMicros.Store(math.MinInt64)
}

// quantiles: nearest rank (as percentile() in test/bench/stats.ts), each reported as its bucket's upper bound.
func quantiles(ps []float64) []any {
	n := samples.Load()
	res := make([]any, len(ps))
	if n == 0 {
		return res
	}
	var cum uint64
	j := 0
	for i := range hist {
		cum += uint64(hist[i].Load())
		for j < len(ps) {
			rank := uint64(math.Ceil(ps[j] / 100 * float64(n)))
			if rank < 1 {
				rank = 1
			}
			if cum < rank {
				break
			}
			if i == numBuckets-1 {
				res[j] = float64(maxMicros.Load()) / 1000
			} else {
				res[j] = float64(i+1) * bucketMs
			}
			j++
		}
		if j == len(ps) {
			break
		}
	}
	for ; j < len(ps); j++ { // counts moved under us (a reset): report the max
		res[j] = float64(maxMicros.Load()) / 1000
	}
	return res
}

func cpuMs() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return math.NaN()
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
}

type stream struct {
	pending  []byte // a message split across DATA frames
	messages uint64
	unacked  uint32 // bytes consumed since the last WINDOW_UPDATE
	done     bool
}

type conn struct {
	nc          net.Conn
	br          *bufio.Reader
	bw          *bufio.Writer
	fr          *http2.Framer
	streams     []*stream // by (stream id - 1) / 2
	connUnacked uint32
}

func dial(addr, path string, reqs [][]byte) (*conn, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &conn{nc: nc, br: bufio.NewReaderSize(nc, readBuffer), bw: bufio.NewWriterSize(nc, readBuffer)}
	c.fr = http2.NewFramer(c.bw, c.br)
	c.fr.SetReuseFrames()
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.fr.MaxHeaderListSize = 1 << 20
	if _, err := c.bw.WriteString(http2.ClientPreface); err != nil {
		return nil, err
	}
	if err := c.fr.WriteSettings(http2.Setting{ID: http2.SettingEnablePush, Val: 0}, http2.Setting{ID: http2.SettingInitialWindowSize, Val: streamWindow}); err != nil {
		return nil, err
	}
	if err := c.fr.WriteWindowUpdate(0, connWindow-65535); err != nil {
		return nil, err
	}
	var hbuf bytes.Buffer
	henc := hpack.NewEncoder(&hbuf)
	for k, req := range reqs {
		id := uint32(1 + 2*k)
		hbuf.Reset()
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", addr}, {":path", path}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
			henc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hbuf.Bytes(), EndHeaders: true}); err != nil {
			return nil, err
		}
		if err := c.fr.WriteData(id, false, req); err != nil {
			return nil, err
		}
		c.streams = append(c.streams, &stream{})
	}
	return c, c.bw.Flush()
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

func (c *conn) onMessage(s *stream, m []byte, now float64) {
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
			c.onMessage(s, s.pending[prefixSize:], now)
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
		c.onMessage(s, data[prefixSize:total], now)
		data = data[total:]
	}
	if len(data) > 0 {
		s.pending = append(s.pending[:0], data...)
	}
	return nil
}

func (c *conn) run() {
	err := c.loop()
	connErrors.Add(1)
	for _, s := range c.streams {
		s.end()
	}
	if err != nil && !errors.Is(err, io.EOF) {
		noteStatus("connection: " + err.Error())
	}
	c.nc.Close()
}

func (c *conn) loop() error {
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			return err
		}
		switch f := f.(type) {
		case *http2.DataFrame:
			n := f.Header().Length
			s := c.stream(f.StreamID)
			if s != nil {
				if err := c.onData(s, f.Data(), nowMs()); err != nil {
					return err
				}
				if f.StreamEnded() {
					s.end()
				} else if s.unacked += n; s.unacked >= streamWindow/2 {
					if err := c.fr.WriteWindowUpdate(f.StreamID, s.unacked); err != nil {
						return err
					}
					s.unacked = 0
				}
			}
			if c.connUnacked += n; c.connUnacked >= connWindow/2 {
				if err := c.fr.WriteWindowUpdate(0, c.connUnacked); err != nil {
					return err
				}
				c.connUnacked = 0
			}
		case *http2.MetaHeadersFrame:
			if code := f.PseudoValue("status"); code != "" && code != "200" {
				noteStatus(":status " + code)
			}
			if st := f.Header().Flags; st.Has(http2.FlagHeadersEndStream) {
				if g := headerValue(f, "grpc-status"); g != "0" {
					noteStatus(fmt.Sprintf("grpc-status %s: %s", g, headerValue(f, "grpc-message")))
				}
				if s := c.stream(f.StreamID); s != nil {
					s.end()
				}
			}
		case *http2.RSTStreamFrame:
			noteStatus("RST_STREAM " + f.ErrCode.String())
			if s := c.stream(f.StreamID); s != nil {
				s.end()
			}
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if err := c.fr.WriteSettingsAck(); err != nil {
					return err
				}
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				if err := c.fr.WritePing(true, f.Data); err != nil {
					return err
				}
			}
		case *http2.GoAwayFrame:
			noteStatus("GOAWAY " + f.ErrCode.String())
		}
		// Write what this turn produced once nothing more is buffered to read (one syscall per batch).
		if c.br.Buffered() == 0 && c.bw.Buffered() > 0 {
			if err := c.bw.Flush(); err != nil {
				return err
			}
		}
	}
}

func headerValue(f *http2.MetaHeadersFrame, name string) string {
	for _, h := range f.RegularFields() {
		if h.Name == name {
			return h.Value
		}
	}
	return ""
}

func readRequests(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var reqs [][]byte
	for o := 0; o < len(b); {
		if len(b)-o < prefixSize {
			return nil, fmt.Errorf("truncated frame at byte %d", o)
		}
		total := prefixSize + int(binary.BigEndian.Uint32(b[o+1:o+prefixSize]))
		if len(b)-o < total {
			return nil, fmt.Errorf("truncated frame at byte %d", o)
		}
		reqs = append(reqs, b[o:o+total])
		o += total
	}
	return reqs, nil
}

func nullable(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}

func main() {
	addr := flag.String("addr", "", "host:port of the fanout (h2c)")
	conns := flag.Int("conns", 1, "connections; stream i goes on connection i % conns")
	reqPath := flag.String("requests", "", "file of gRPC-framed SubscribeRequests (5-byte prefix + body), one per stream")
	path := flag.String("path", "/arpc.StreamService/Subscribe", "request path")
	flag.Parse()
	fail := func(err error) {
		emit(map[string]any{"type": "error", "message": err.Error()})
		os.Exit(1)
	}
	reqs, err := readRequests(*reqPath)
	if err != nil {
		fail(err)
	}
	if *addr == "" || *conns < 1 || len(reqs) == 0 {
		fail(errors.New("need -addr, -conns >= 1 and at least one request"))
	}
	resetHistogram()
	totalStr = int64(len(reqs))
	n := min(*conns, len(reqs))
	per := make([][][]byte, n)
	for i, r := range reqs {
		per[i%n] = append(per[i%n], r)
	}
	cs := make([]*conn, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs[i], errs[i] = dial(*addr, *path, per[i])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		fail(err)
	}
	for _, c := range cs {
		go c.run()
	}
	emit(map[string]any{"type": "connected", "connections": n, "streams": len(reqs)})

	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		switch cmd := strings.TrimSpace(sc.Text()); cmd {
		case "record on":
			resetHistogram()
			recording.Store(true)
			emit(map[string]any{"type": "ok", "command": cmd})
		case "record off":
			recording.Store(false)
			emit(map[string]any{"type": "ok", "command": cmd})
		case "reset":
			resetHistogram()
			emit(map[string]any{"type": "ok", "command": cmd})
		case "stats":
			q := quantiles([]float64{50, 99})
			mx := any(nil)
			if samples.Load() > 0 {
				mx = float64(maxMicros.Load()) / 1000
			}
			statusMu.Lock()
			st := lastStatus
			statusMu.Unlock()
			emit(map[string]any{
				"type": "stats", "received": received.Load(), "messages": messages.Load(), "samples": samples.Load(),
				"p50": q[0], "p99": q[1], "max": mx, "pongs": pongs.Load(), "streams": totalStr, "ended": ended.Load(),
				"connErrors": connErrors.Load(), "cpuMs": nullable(cpuMs()), "nowMs": nowMs(), "status": st,
			})
		case "quit":
			out.Flush()
			os.Exit(0)
		case "":
		default:
			emit(map[string]any{"type": "error", "message": "unknown command: " + cmd})
		}
	}
	os.Exit(0)
}
