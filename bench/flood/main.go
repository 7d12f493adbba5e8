// Command flood is both ends of bench/scale.sh's event-throughput test: an agent that writes
// lines at a fixed rate and times each of its writes, and a reader of `agt tail -f --json` that
// counts what arrived and how late.
//
// Usage:
//
//	flood write [-rate N] [-for DURATION] -go FILE -report FILE
//	agt tail -f --json NAME | flood read -go FILE -report FILE
//
// The writer prints "flood ready", waits until FILE exists, then writes "flood SEQ UNIXNANO"
// lines, SEQ from 0, at RATE lines a second for DURATION, each with one write(2) on its stdout,
// and then "flood done SENT". The time in a line is the wall clock just before its write, so a
// reader on the same machine can tell how late the line reached it. It paces itself against the
// start: a line that is late is written at once, so a stall is followed by a burst that catches
// up, and the rate stays RATE on average unless the writes themselves block. A write's wall
// time also counts time the writer was preempted on a busy machine; a write during which its
// thread slept of its own accord (a voluntary context switch, getrusage) is one that blocked,
// on a full pipe: the report gives the longest of each.
//
// The reader creates FILE when it sees the ready line, so the flood starts only once `agt tail -f`
// is attached. At the end of its input it writes its report: lines lost (SEQs never seen),
// duplicated or out of order, jumps in the events' own seq, gap events, and the latency from the
// line's time to the moment the reader got it (and, of that, the part up to the supervisor's
// timestamp of the event).
//
// Both reports are one JSON object, written to -report FILE.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fs := flag.NewFlagSet("flood "+os.Args[1], flag.ExitOnError)
	rate := fs.Int("rate", 10000, "lines a second (write)")
	dur := fs.Duration("for", 60*time.Second, "how long to write (write)")
	goFile := fs.String("go", "", "the file whose creation starts the flood")
	report := fs.String("report", "", "where to write the JSON report")
	fs.Parse(os.Args[2:])
	if *goFile == "" || *report == "" || fs.NArg() != 0 {
		usage()
	}
	var rep any
	var err error
	switch os.Args[1] {
	case "write":
		rep, err = write(*rate, *dur, *goFile)
	case "read":
		rep, err = read(*goFile)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		os.Exit(1)
	}
	b, _ := json.Marshal(rep)
	if err := os.WriteFile(*report, append(b, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: flood write [-rate N] [-for DURATION] -go FILE -report FILE\n       flood read -go FILE -report FILE")
	os.Exit(2)
}

// writeReport is what the writer measured of its own writes.
type writeReport struct {
	Sent         int     `json:"sent"`
	Secs         float64 `json:"secs"`
	Rate         float64 `json:"rate"`           // lines a second achieved
	WriteP50us   float64 `json:"write_p50_us"`   // one write(2)
	WriteP99us   float64 `json:"write_p99_us"`   //
	WriteMaxms   float64 `json:"write_max_ms"`   // the longest write, preempted or blocked
	BlockedMaxms float64 `json:"blocked_max_ms"` // the longest write that slept: the pipe was full
	Blocked      int     `json:"blocked"`        // writes that slept
	WritesOver1  int     `json:"writes_over_1ms"`
	WritesOver10 int     `json:"writes_over_10ms"`
	BehindMaxms  float64 `json:"behind_max_ms"` // the furthest a line fell behind its planned time
}

func write(rate int, dur time.Duration, goFile string) (*writeReport, error) {
	if rate <= 0 || dur <= 0 {
		return nil, errors.New("-rate and -for must be positive")
	}
	if err := writeAll([]byte("flood ready\n")); err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(goFile); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s did not appear within a minute", goFile)
		}
	}
	total := int(int64(rate) * int64(dur) / int64(time.Second))
	period := time.Second / time.Duration(rate)
	took := make([]time.Duration, 0, total)
	var behind, blockedMax time.Duration
	blocked := 0
	runtime.LockOSThread() // RUSAGE_THREAD below is this goroutine's thread
	var ru0, ru1 syscall.Rusage
	buf := make([]byte, 0, 64)
	start := time.Now()
	for i := range total {
		planned := start.Add(time.Duration(i) * period)
		now := time.Now()
		if d := planned.Sub(now); d > 0 {
			time.Sleep(d)
			now = time.Now()
		} else if -d > behind {
			behind = -d
		}
		buf = append(buf[:0], "flood "...)
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, now.UnixNano(), 10)
		buf = append(buf, '\n')
		syscall.Getrusage(syscall.RUSAGE_THREAD, &ru0)
		t0 := time.Now()
		if err := writeAll(buf); err != nil {
			return nil, err
		}
		d := time.Since(t0)
		syscall.Getrusage(syscall.RUSAGE_THREAD, &ru1)
		took = append(took, d)
		if ru1.Nvcsw > ru0.Nvcsw {
			blocked++
			blockedMax = max(blockedMax, d)
		}
	}
	secs := time.Since(start).Seconds()
	if err := writeAll(fmt.Appendf(nil, "flood done %d\n", total)); err != nil {
		return nil, err
	}
	slices.Sort(took)
	r := &writeReport{Sent: total, Secs: secs, Rate: float64(total) / secs,
		WriteP50us: us(pct(took, 0.50)), WriteP99us: us(pct(took, 0.99)),
		WriteMaxms: ms(pct(took, 1)), BlockedMaxms: ms(blockedMax), Blocked: blocked,
		BehindMaxms: ms(behind)}
	for _, d := range took {
		if d > time.Millisecond {
			r.WritesOver1++
		}
		if d > 10*time.Millisecond {
			r.WritesOver10++
		}
	}
	return r, nil
}

// writeAll writes p to stdout with write(2) itself, so that a write's time is the time the
// kernel kept the agent blocked, with no buffering or poller in between.
func writeAll(p []byte) error {
	for len(p) > 0 {
		n, err := syscall.Write(1, p)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("write stdout: %w", err)
		}
		p = p[n:]
	}
	return nil
}

// readReport is what the reader saw arrive through agt tail -f.
type readReport struct {
	Sent       int     `json:"sent"` // from the done line; -1 when it never came
	Received   int     `json:"received"`
	Lost       int     `json:"lost"`
	Dups       int     `json:"dups"`
	OutOfOrder int     `json:"out_of_order"`
	SeqJumps   int64   `json:"seq_jumps"` // events missing by the events' own seq
	Gaps       int     `json:"gap_events"`
	GapMissed  int64   `json:"gap_missed"`
	LatP50us   float64 `json:"lat_p50_us"` // line written -> reader got it
	LatP99us   float64 `json:"lat_p99_us"`
	LatMaxms   float64 `json:"lat_max_ms"`
	SupP50us   float64 `json:"sup_p50_us"` // line written -> the supervisor's event timestamp
	SupP99us   float64 `json:"sup_p99_us"`
	SupMaxms   float64 `json:"sup_max_ms"`
}

type event struct {
	Type   string    `json:"type"`
	Seq    int64     `json:"seq"`
	TS     time.Time `json:"ts"`
	Line   string    `json:"line"`
	Missed int64     `json:"missed"`
}

func read(goFile string) (*readReport, error) {
	r := &readReport{Sent: -1}
	var seen []bool
	var lat, sup []time.Duration
	last, lastSeq := -1, int64(0)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		got := time.Now()
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("decode %.80q: %w", sc.Bytes(), err)
		}
		if lastSeq > 0 && ev.Seq > lastSeq+1 && ev.Type != "gap" {
			r.SeqJumps += ev.Seq - lastSeq - 1
		}
		lastSeq = ev.Seq
		switch ev.Type {
		case "gap":
			r.Gaps++
			r.GapMissed += ev.Missed
			continue
		case "output":
		default:
			continue
		}
		f := bytes.Fields([]byte(ev.Line))
		switch {
		case len(f) == 2 && string(f[1]) == "ready":
			if err := os.WriteFile(goFile, nil, 0o644); err != nil {
				return nil, err
			}
		case len(f) == 3 && string(f[1]) == "done":
			r.Sent, _ = strconv.Atoi(string(f[2]))
		case len(f) == 3 && string(f[0]) == "flood":
			seq, err1 := strconv.Atoi(string(f[1]))
			ns, err2 := strconv.ParseInt(string(f[2]), 10, 64)
			if err1 != nil || err2 != nil || seq < 0 {
				return nil, fmt.Errorf("bad line %q", ev.Line)
			}
			for seq >= len(seen) {
				seen = append(seen, make([]bool, len(seen)+1024)...)
			}
			if seen[seq] {
				r.Dups++
				continue
			}
			seen[seq] = true
			r.Received++
			if seq < last {
				r.OutOfOrder++
			}
			last = max(last, seq)
			lat = append(lat, got.Sub(time.Unix(0, ns)))
			sup = append(sup, ev.TS.Sub(time.Unix(0, ns)))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if r.Sent >= 0 {
		r.Lost = r.Sent - r.Received
	} else {
		r.Lost = last + 1 - r.Received
	}
	slices.Sort(lat)
	slices.Sort(sup)
	r.LatP50us, r.LatP99us, r.LatMaxms = us(pct(lat, 0.50)), us(pct(lat, 0.99)), ms(pct(lat, 1))
	r.SupP50us, r.SupP99us, r.SupMaxms = us(pct(sup, 0.50)), us(pct(sup, 0.99)), ms(pct(sup, 1))
	return r, nil
}

// pct is the p-quantile of sorted d (nearest rank); 0 when d is empty.
func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[int(p*float64(len(d)-1)+0.5)]
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
