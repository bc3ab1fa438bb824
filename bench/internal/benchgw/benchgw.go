// Package benchgw owns what the benchmark harnesses under bench/ share:
// starting the real switchboard binary on a free loopback port and
// waiting until it is ready, following chat runs to their end by their
// events, and latency percentiles. Only the harnesses import it.
package benchgw

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/client"
)

// Gateway is a switchboard process started by Start.
type Gateway struct {
	Cmd *exec.Cmd
	// WSURL is the gateway's WebSocket URL.
	WSURL string
	// Ready is how long it took from the process start to /readyz.
	Ready time.Duration
	// Started is when the process was started.
	Started time.Time
}

var listenRE = regexp.MustCompile(`listening on http://(\S+)`)

// Start runs `serve --port 0` on stateDir, without provider keys or a
// config file from the caller's environment, with env added (NAME=value),
// and waits until /readyz answers.
func Start(bin, stateDir string, env ...string) (*Gateway, error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--port", "0")
	cmd.Env = append(os.Environ(), "SWITCHBOARD_STATE_DIR="+stateDir, "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=",
		"SWITCHBOARD_GATEWAY_TOKEN=", "SWITCHBOARD_CONFIG=")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	g := &Gateway{Cmd: cmd, Started: t0}
	sc := bufio.NewScanner(out)
	addr := ""
	for sc.Scan() {
		if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
			break
		}
	}
	go func() { // keep draining stdout
		for sc.Scan() {
		}
	}()
	if addr == "" {
		g.Stop()
		return nil, errors.New("gateway printed no listen address")
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				g.Ready = time.Since(t0)
				g.WSURL = "ws://" + addr
				return g, nil
			}
		}
		time.Sleep(200 * time.Microsecond)
	}
	g.Stop()
	return nil, errors.New("gateway never became ready")
}

// PID is the gateway process's id.
func (g *Gateway) PID() int { return g.Cmd.Process.Pid }

// Stop interrupts the gateway and waits for it (killing it after 10 s).
func (g *Gateway) Stop() {
	g.Cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { g.Cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		g.Cmd.Process.Kill()
		<-done
	}
}

// Finals routes chat final/error/aborted events to waiters by runId.
type Finals struct {
	ch chan waitReq
}

type waitReq struct {
	runID string
	done  chan string
}

// ConnClosed is the state Expect's channel gets when the connection's
// events end (the gateway closed it, or it went away) before the run's
// final: a waiter gets it instead of waiting for ever.
const ConnClosed = "connection closed"

// NewFinals follows the chat events c receives.
func NewFinals(c *client.Client) *Finals { return newFinals(c.Events()) }

func newFinals(events <-chan client.Event) *Finals {
	f := &Finals{ch: make(chan waitReq)}
	go func() {
		waiting := map[string]chan string{}
		ended := map[string]string{}
		for {
			select {
			case w := <-f.ch:
				if st, ok := ended[w.runID]; ok {
					w.done <- st
					delete(ended, w.runID)
					continue
				}
				if events == nil {
					w.done <- ConnClosed
					continue
				}
				waiting[w.runID] = w.done
			case ev, ok := <-events:
				if !ok {
					for id, d := range waiting {
						d <- ConnClosed
						delete(waiting, id)
					}
					events = nil // from now on, Expect answers ConnClosed
					continue
				}
				if ev.Event != "chat" {
					continue
				}
				var p struct {
					RunID string `json:"runId"`
					State string `json:"state"`
				}
				if json.Unmarshal(ev.Payload, &p) != nil {
					continue
				}
				switch p.State {
				case "final", "error", "aborted":
					if d, ok := waiting[p.RunID]; ok {
						d <- p.State
						delete(waiting, p.RunID)
					} else {
						ended[p.RunID] = p.State
					}
				}
			}
		}
	}()
	return f
}

// Expect returns a channel that gets the run's final chat state.
func (f *Finals) Expect(runID string) <-chan string {
	d := make(chan string, 1)
	f.ch <- waitReq{runID, d}
	return d
}

// Percentiles returns the median and the 99th percentile of ds.
func Percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[min(len(s)-1, len(s)*99/100)]
}

// Round rounds d for printing: milliseconds above a second, tens of
// microseconds above a millisecond, microseconds below.
func Round(d time.Duration) time.Duration {
	switch {
	case d > time.Second:
		return d.Round(time.Millisecond)
	case d > time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}

// TreeCPU is the user+system CPU time so far of process pid, of the
// children it reaped, and of its live children (Linux; one level, as a
// PostgreSQL postmaster's backends are).
func TreeCPU(pid int) time.Duration {
	total := time.Duration(0)
	if f := procStat(pid); f != nil {
		total += ticks(f, 11, 12, 13, 14) // utime, stime, cutime, cstime
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil || child == pid {
			continue
		}
		if f := procStat(child); f != nil && f[1] == strconv.Itoa(pid) {
			total += ticks(f, 11, 12)
		}
	}
	return total
}

// procStat returns the fields of /proc/<pid>/stat after the command name
// (state first, then ppid, …), nil when unreadable.
func procStat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 15 {
		return nil
	}
	return f
}

// ticks sums the clock-tick fields at idx of a procStat.
func ticks(f []string, idx ...int) time.Duration {
	var n int64
	for _, i := range idx {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		n += v
	}
	return time.Duration(n) * time.Second / 100 // USER_HZ
}

// RSSMiB is process pid's resident set (VmRSS) in MiB, -1 when unknown.
func RSSMiB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			if err != nil {
				return -1
			}
			return kb / 1024
		}
	}
	return -1
}
