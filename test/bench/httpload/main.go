// httpload: the chain gateway bench's load client (test/bench/rpc.ts), compiled, so that the figures are the
// gateway's and not the client's: a closed loop of HTTP/1.1 keep-alive POSTs of one fixed body, one request in
// flight per connection, over raw TCP (the request's bytes are built once; a response is read as status line,
// headers up to the blank line, then Content-Length bytes or chunks, into one buffer per connection).
//
// Commands on stdin, one JSON line each; one JSON line per answer on stdout, in command order. Stdin closing ends
// the process.
//
//	{"cmd":"thru","targets":[T],"body":B,"ms":M,"conns":C}
//	    C connections to T, each sending B back to back for M ms:
//	    {"type":"thru","ok":N,"failed":F,"wallMs":W,"cpuMs":U}
//	{"cmd":"lat","targets":[T1,…,Tk],"body":B,"n":N}
//	    one connection per target; N rounds, each one request to every target in turn, one at a time (round i
//	    starts at target i mod k, so each target goes first equally often):
//	    {"type":"lat","us":[[…N samples of T1 in µs…],…],"cpuMs":U}
//
// T = {"addr":"127.0.0.1:PORT","path":"/"}; B is base64. A non-200 status or a broken connection counts as failed
// (thru) or ends the command with {"type":"error","message":…} (lat).
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type target struct {
	Addr string `json:"addr"`
	Path string `json:"path"`
}

type command struct {
	Cmd     string   `json:"cmd"`
	Targets []target `json:"targets"`
	Body    string   `json:"body"`
	Ms      int      `json:"ms"`
	Conns   int      `json:"conns"`
	N       int      `json:"n"`
}

type conn struct {
	c   net.Conn
	r   *bufio.Reader
	req []byte
}

func dial(t target, body []byte) (*conn, error) {
	c, err := net.Dial("tcp", t.Addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	req := fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", t.Path, t.Addr, len(body))
	req = append(req, body...)
	return &conn{c: c, r: bufio.NewReaderSize(c, 64<<10), req: req}, nil
}

var errStatus = errors.New("status not 200")

// do sends the request and reads one response whole; the body is discarded.
func (k *conn) do() error {
	if _, err := k.c.Write(k.req); err != nil {
		return err
	}
	line, err := k.r.ReadSlice('\n')
	if err != nil {
		return err
	}
	status := len(line) >= 12 && string(line[9:12]) == "200"
	length := -1
	chunked := false
	for {
		h, err := k.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(h) <= 2 {
			break
		}
		if i := bytes.IndexByte(h, ':'); i > 0 {
			name := h[:i]
			val := bytes.TrimSpace(h[i+1:])
			if bytes.EqualFold(name, []byte("content-length")) {
				n, err := strconv.Atoi(string(val))
				if err != nil {
					return err
				}
				length = n
			} else if bytes.EqualFold(name, []byte("transfer-encoding")) && bytes.EqualFold(val, []byte("chunked")) {
				chunked = true
			}
		}
	}
	if chunked {
		for {
			l, err := k.r.ReadSlice('\n')
			if err != nil {
				return err
			}
			l = bytes.TrimSpace(l)
			if i := bytes.IndexByte(l, ';'); i >= 0 {
				l = l[:i]
			}
			n, err := strconv.ParseInt(string(l), 16, 64)
			if err != nil {
				return err
			}
			if _, err := k.r.Discard(int(n) + 2); err != nil {
				return err
			}
			if n == 0 {
				break
			}
		}
	} else if length > 0 {
		if _, err := k.r.Discard(length); err != nil {
			return err
		}
	} else if length < 0 {
		return errors.New("response without a length")
	}
	if !status {
		return errStatus
	}
	return nil
}

func cpuMs() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
}

func thru(cmd command, body []byte) (any, error) {
	if len(cmd.Targets) != 1 || cmd.Conns < 1 || cmd.Ms < 1 {
		return nil, errors.New("thru: one target, conns ≥ 1, ms ≥ 1")
	}
	conns := make([]*conn, cmd.Conns)
	for i := range conns {
		k, err := dial(cmd.Targets[0], body)
		if err != nil {
			return nil, err
		}
		conns[i] = k
	}
	var ok, failed atomic.Int64
	cpu0 := cpuMs()
	t0 := time.Now()
	end := t0.Add(time.Duration(cmd.Ms) * time.Millisecond)
	var wg sync.WaitGroup
	for _, k := range conns {
		wg.Add(1)
		go func(k *conn) {
			defer wg.Done()
			defer k.c.Close()
			for time.Now().Before(end) {
				if err := k.do(); err != nil {
					failed.Add(1)
					if !errors.Is(err, errStatus) {
						return
					}
					continue
				}
				ok.Add(1)
			}
		}(k)
	}
	wg.Wait()
	wall := time.Since(t0)
	return map[string]any{"type": "thru", "ok": ok.Load(), "failed": failed.Load(), "wallMs": float64(wall.Nanoseconds()) / 1e6, "cpuMs": cpuMs() - cpu0}, nil
}

func lat(cmd command, body []byte) (any, error) {
	k := len(cmd.Targets)
	if k < 1 || cmd.N < 1 {
		return nil, errors.New("lat: targets and n ≥ 1")
	}
	conns := make([]*conn, k)
	for i, t := range cmd.Targets {
		c, err := dial(t, body)
		if err != nil {
			return nil, err
		}
		defer c.c.Close()
		conns[i] = c
	}
	us := make([][]float64, k)
	for i := range us {
		us[i] = make([]float64, cmd.N)
	}
	cpu0 := cpuMs()
	for r := 0; r < cmd.N; r++ {
		for j := 0; j < k; j++ {
			t := (r + j) % k
			t0 := time.Now()
			if err := conns[t].do(); err != nil {
				return nil, fmt.Errorf("lat: target %d: %w", t, err)
			}
			us[t][r] = float64(time.Since(t0).Nanoseconds()) / 1e3
		}
	}
	return map[string]any{"type": "lat", "us": us, "cpuMs": cpuMs() - cpu0}, nil
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var cmd command
		var res any
		err := json.Unmarshal(in.Bytes(), &cmd)
		var body []byte
		if err == nil {
			body, err = base64.StdEncoding.DecodeString(cmd.Body)
		}
		if err == nil {
			switch cmd.Cmd {
			case "thru":
				res, err = thru(cmd, body)
			case "lat":
				res, err = lat(cmd, body)
			default:
				err = fmt.Errorf("unknown command %q", cmd.Cmd)
			}
		}
		if err != nil {
			res = map[string]any{"type": "error", "message": err.Error()}
		}
		if err := out.Encode(res); err != nil {
			os.Exit(1)
		}
	}
}
