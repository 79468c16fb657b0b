// fanout-loadclient: the fanout benchmark's load client, compiled, so the fanout's figures are the fanout's.
//
// It opens -conns h2c connections (HTTP/2 with prior knowledge) to -addr and one Subscribe stream per gRPC
// frame in -requests (stream i on connection i % conns, as test/fanout/raw-client.ts spreads them), sends each
// stream its frame (no END_STREAM: the stream stays open), then reads: it cuts the byte stream at the gRPC length
// prefixes, counts every message, and takes the publish stamp out of signatures[0] exactly as publishStamp() in
// test/bench/fanout.ts does, recording (now - stamp) into a fixed-size histogram while recording is on.
//
// Raw HTTP/2 framing over non-blocking sockets in one epoll loop on one thread (conn.go), no per-message
// allocation. Commands on stdin, one JSON line per answer on stdout (README.md has the protocol). Stdin closing
// ends the process.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	prefixSize = 5
	// Flow control as the Node raw client announces it: 1 MiB per stream, 16 MiB per connection; a window
	// update once half of a window has been consumed (what nghttp2 does).
	streamWindow = 1 << 20
	connWindow   = 16 << 20
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
	dataBytes  atomic.Uint64 // DATA payload bytes read (gRPC prefixes and messages as they came: the wire's bulk)
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
	// -v2: responses are meridian.stream.v2 SubscribeUpdates (the stamp is inside transaction.decoded);
	// -accept-encoding: sent as grpc-accept-encoding, and how a message with the compressed flag is read.
	v2Mode    bool
	acceptEnc string
	outMu     sync.Mutex
	out       = bufio.NewWriter(os.Stdout)
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
	if v2Mode {
		// meridian.stream.v2 SubscribeUpdate: transaction (field 5) → decoded (field 3) is the v1
		// SubscribeResponseTransaction, whose first signatures entry carries the stamp.
		tx, ok := lenField(b, 0x2a)
		if !ok {
			return 0, false
		}
		dec, ok := lenField(tx, 0x1a)
		if !ok {
			return 0, false
		}
		sig, ok := lenField(dec, 0x32)
		if !ok || len(sig) < stampOff+8 {
			return 0, false
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(sig[stampOff:])), true
	}
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

// lenField: the first length-delimited field with this tag byte in a protobuf message, bounds-checked.
func lenField(b []byte, want byte) ([]byte, bool) {
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
		switch tag & 7 {
		case 0:
			if _, ok := varint(); !ok {
				return nil, false
			}
		case 1:
			o += 8
		case 5:
			o += 4
		case 2:
			l, ok := varint()
			if !ok || l > uint64(len(b)-o) {
				return nil, false
			}
			if tag == want {
				return b[o : o+int(l)], true
			}
			o += int(l)
		default:
			return nil, false
		}
	}
	return nil, false
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

// cpuMs: this process's user and system CPU so far.
func cpuMs() (float64, float64) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return math.NaN(), math.NaN()
	}
	return float64(ru.Utime.Nano()) / 1e6, float64(ru.Stime.Nano()) / 1e6
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
	perStream := flag.Int("frames-per-stream", 1, "consecutive gRPC frames of -requests that make one stream's requests")
	flag.BoolVar(&v2Mode, "v2", false, "responses are meridian.stream.v2 SubscribeUpdates")
	flag.StringVar(&acceptEnc, "accept-encoding", "", "grpc-accept-encoding to send (gzip is decoded; zstd messages are counted, not decoded)")
	flag.Parse()
	fail := func(err error) {
		emit(map[string]any{"type": "error", "message": err.Error()})
		os.Exit(1)
	}
	reqs, err := readRequests(*reqPath)
	if err != nil {
		fail(err)
	}
	if *addr == "" || *conns < 1 || len(reqs) == 0 || *perStream < 1 || len(reqs)%*perStream != 0 {
		fail(errors.New("need -addr, -conns >= 1 and at least one request (a whole number of -frames-per-stream)"))
	}
	if *perStream > 1 {
		grouped := make([][]byte, 0, len(reqs) / *perStream)
		for i := 0; i < len(reqs); i += *perStream {
			var b []byte
			for _, r := range reqs[i : i+*perStream] {
				b = append(b, r...)
			}
			grouped = append(grouped, b)
		}
		reqs = grouped
	}
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2) // the loop holds one P while it waits in epoll (conn.go); the command reader needs another
	}
	resetHistogram()
	totalStr = int64(len(reqs))
	n := min(*conns, len(reqs))
	per := make([][][]byte, n)
	for i, r := range reqs {
		per[i%n] = append(per[i%n], r)
	}
	cs := make([]*conn, n)
	for i := range n {
		if cs[i], err = dial(*addr, *path, per[i]); err != nil {
			fail(err)
		}
	}
	go func() {
		if err := serve(cs); err != nil {
			fail(err)
		}
	}()
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
		case "stats", "counts":
			// counts: the counters only, cheap enough to poll; stats adds the quantiles (a scan of the histogram).
			user, sys := cpuMs()
			statusMu.Lock()
			st := lastStatus
			statusMu.Unlock()
			line := map[string]any{
				"type": cmd, "received": received.Load(), "messages": messages.Load(), "samples": samples.Load(), "bytes": dataBytes.Load(),
				"pongs": pongs.Load(), "streams": totalStr, "ended": ended.Load(), "connErrors": connErrors.Load(),
				"cpuMs": nullable(user + sys), "userMs": nullable(user), "sysMs": nullable(sys), "nowMs": nowMs(), "status": st,
			}
			if cmd == "stats" {
				q := quantiles([]float64{50, 99})
				line["p50"], line["p99"], line["max"] = q[0], q[1], nil
				if samples.Load() > 0 {
					line["max"] = float64(maxMicros.Load()) / 1000
				}
			}
			emit(line)
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
