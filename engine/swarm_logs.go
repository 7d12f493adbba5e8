package engine

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"agt/hosts"
)

// A job's events are its stdout, which the swarm keeps as the service's logs: docker service
// logs --raw prints them, -f follows them. A follow never ends by itself, so agt asks the swarm
// how the task is meanwhile; once it has ended, one last read takes what the stream had not
// given yet. Every event is passed at most once, by its seq.

// maxEventLine bounds one line of a job's output; a longer one is dropped.
const maxEventLine = 16 << 20

// event is one line of a job's stdout that is an event of its own agent.
type event struct {
	line []byte // the line as the job printed it
	seq  int64
	typ  string
}

// parseEvent reads a line of job name's stdout: an event of agent name (a JSON object with
// its seq and type), or ok false for anything else, which is dropped: a job prints for its
// own agent only.
func parseEvent(name string, line []byte) (event, bool) {
	line = bytes.TrimSpace(line)
	if len(line) < 2 || line[0] != '{' || !gjson.ValidBytes(line) {
		return event{}, false
	}
	r := gjson.GetManyBytes(line, "agent", "seq", "type")
	if r[0].Type != gjson.String || r[0].Str != name || r[1].Type != gjson.Number || r[1].Int() < 1 || r[2].Type != gjson.String || r[2].Str == "" {
		return event{}, false
	}
	return event{line: line, seq: r[1].Int(), typ: r[2].Str}, true
}

// eachLine calls fn with each line of r (a line over maxEventLine is dropped) until r ends or
// fn returns false.
func eachLine(r io.Reader, fn func([]byte) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	skipping := false
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case err == bufio.ErrBufferFull:
			if !skipping {
				long = append(long, chunk...)
				if len(long) > maxEventLine {
					long, skipping = long[:0], true
				}
			}
			continue
		case len(chunk) > 0 || len(long) > 0:
			if !skipping && len(long)+len(bytes.TrimSuffix(chunk, []byte("\n"))) <= maxEventLine {
				line := chunk
				if len(long) > 0 {
					line = append(long, chunk...)
				}
				if !fn(bytes.TrimSuffix(line, []byte("\n"))) {
					return nil
				}
			}
			long, skipping = long[:0], false
		}
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// logs reads what job j printed so far: its events, and the last of its stderr lines that is
// not a hint (agt's own words, when the job failed). It reads the logs of j's task, not of its service: a
// service's logs fail while a task of it that never ran is listed (the replacement that a
// stop leaves waiting).
func (s *Swarm) logs(ctx context.Context, j *job) ([]event, string, error) {
	if j.task == nil {
		return nil, "", nil
	}
	var errs bounded
	errs.max = 64 << 10
	cmd := s.command(ctx, "service", "logs", "--raw", j.task.ID)
	cmd.Stderr = &errs
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", s.failed(ctx, []string{"service", "logs"}, "", err)
	}
	var evs []event
	eachLine(out, func(line []byte) bool {
		if ev, ok := parseEvent(j.name(), line); ok {
			ev.line = bytes.Clone(ev.line)
			evs = append(evs, ev)
		}
		return true
	})
	if err := cmd.Wait(); err != nil {
		return nil, "", s.failed(ctx, []string{"service", "logs"}, errs.String(), err)
	}
	return evs, agtWords(errs.String()), nil
}

// follower passes the events of one job, each once, in the order the job printed them.
type follower struct {
	s    *Swarm
	name string
	last int64 // the last seq passed
	// pass gets each new event; false stops the follow.
	pass func(event) bool

	mu      sync.Mutex // feed: from the stream, and from the last read
	stopped chan struct{}
}

// feed passes ev when it is new; false once pass asked to stop.
func (f *follower) feed(ev event) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped == nil {
		return false
	}
	if ev.seq <= f.last {
		return true
	}
	f.last = ev.seq
	if !f.pass(ev) {
		close(f.stopped)
		f.stopped = nil
		return false
	}
	return true
}

// run follows the job until it has ended, pass returns false, or ctx ends. It returns the
// job's status at the end (zero when pass stopped it). status, when set, gets the job's
// status each time agt asks the swarm.
func (f *follower) run(ctx context.Context, status func(Status)) (Status, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan struct{})
	f.stopped = stopped
	var streamDone chan error // nil until the task exists
	var errs bounded
	errs.max = 64 << 10
	for {
		j, err := f.job(ctx)
		if err != nil {
			return Status{}, err
		}
		st := j.status()
		if status != nil {
			status(st)
		}
		if streamDone == nil && j.task != nil {
			if streamDone, err = f.stream(ctx, j, &errs); err != nil {
				return Status{}, err
			}
		}
		if st.final() {
			cancel() // the stream: what it had not given, the last read gives
			if streamDone != nil {
				<-streamDone
			}
			evs, _, err := f.s.logs(context.WithoutCancel(ctx), j)
			if err != nil {
				return st, err
			}
			for _, ev := range evs {
				if !f.feed(ev) {
					return Status{}, nil
				}
			}
			return st, nil
		}
		select {
		case <-stopped:
			return Status{}, nil
		case err := <-streamDone:
			// docker service logs -f ended by itself: the daemon went away, or the service.
			if ctx.Err() != nil {
				return Status{}, ctx.Err()
			}
			if err != nil {
				return Status{}, f.s.failed(ctx, []string{"service", "logs"}, errs.String(), err)
			}
			return Status{}, &hosts.Unreachable{Place: f.s.Name(), Reason: "docker service logs --follow ended"}
		case <-ctx.Done():
			return Status{}, ctx.Err()
		case <-time.After(f.s.poll()):
		}
	}
}

// job asks the swarm how the followed job is.
func (f *follower) job(ctx context.Context) (*job, error) {
	jobs, err := f.s.jobs(ctx, []string{f.name})
	var missing *noJob
	if errors.As(err, &missing) {
		return nil, fmt.Errorf("%s is gone from the swarm (removed)", f.name)
	}
	if err != nil {
		return nil, err
	}
	return jobs[0], nil
}

// stream starts docker service logs --follow of j's task, feeding what it prints; the
// channel gets how it ended.
func (f *follower) stream(ctx context.Context, j *job, errs *bounded) (chan error, error) {
	cmd := f.s.command(ctx, "service", "logs", "--follow", "--raw", j.task.ID)
	cmd.Stderr = errs
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, f.s.failed(ctx, []string{"service", "logs"}, "", err)
	}
	done := make(chan error, 1)
	go func() {
		eachLine(out, func(line []byte) bool {
			ev, ok := parseEvent(f.name, line)
			return !ok || f.feed(ev)
		})
		io.Copy(io.Discard, out)
		done <- cmd.Wait()
	}()
	return done, nil
}

func (s *Swarm) poll() time.Duration {
	if s.Poll > 0 {
		return s.Poll
	}
	return PollInterval
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// tailFilter is what tail passes of a job's events: after a seq, of some types, the last n.
type tailFilter struct {
	after map[string]int64 // agent → seq; "" for every agent
	types map[string]bool
	last  int // -1: all
}

func parseTailFilter(c *call) (*tailFilter, error) {
	f := &tailFilter{after: map[string]int64{}, types: map[string]bool{}, last: -1}
	if v, ok := c.get("lines"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, usagef("-n %s: want a number, 0 or more", v)
		}
		f.last = n
	}
	for _, a := range c.all("after") {
		name, seq, ok := strings.Cut(a, "=")
		if !ok {
			name, seq = "", a
		}
		n, err := strconv.ParseInt(seq, 10, 64)
		if err != nil || n < 0 {
			return nil, usagef("--after %s: want SEQ or NAME=SEQ", a)
		}
		f.after[name] = n
	}
	for _, v := range c.all("type") {
		for _, t := range strings.Split(v, ",") {
			f.types[strings.TrimSpace(t)] = true
		}
	}
	return f, nil
}

// afterOf is the seq after which agent's events are passed; ok when --after names it.
func (f *tailFilter) afterOf(agent string) (int64, bool) {
	if n, ok := f.after[agent]; ok {
		return n, true
	}
	n, ok := f.after[""]
	return n, ok
}

func (f *tailFilter) passes(ev event) bool { return len(f.types) == 0 || f.types[ev.typ] }

// tail prints the jobs' events: what they printed so far (the last -n of each, or after
// --after's seq), and with --follow what they print next, until they end (with names) or
// until interrupted (without, new jobs joining).
func (s *Swarm) tail(ctx context.Context, c *call, call *hosts.Call) error {
	filter, err := parseTailFilter(c)
	if err != nil {
		return err
	}
	jobs, err := s.jobs(ctx, c.names)
	if err != nil {
		return err
	}
	var mu sync.Mutex // one line at a time on stdout
	write := func(ev event) bool {
		mu.Lock()
		defer mu.Unlock()
		_, err := fmt.Fprintf(call.Stdout, "%s\n", ev.line)
		return err == nil
	}
	follow := c.bool("follow")
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	started := map[string]bool{}
	start := func(j *job) error {
		name := j.name()
		started[name] = true
		evs, _, err := s.logs(ctx, j)
		if err != nil {
			return err
		}
		from, resumed := filter.afterOf(name)
		var past []event
		for _, ev := range evs {
			if ev.seq > from && filter.passes(ev) {
				past = append(past, ev)
			}
		}
		if filter.last >= 0 && !resumed && len(past) > filter.last {
			past = past[len(past)-filter.last:]
		}
		for _, ev := range past {
			write(ev)
		}
		if !follow {
			return nil
		}
		fl := &follower{s: s, name: name, last: from, pass: func(ev event) bool {
			return !filter.passes(ev) || write(ev)
		}}
		if n := len(evs); n > 0 && evs[n-1].seq > fl.last {
			fl.last = evs[n-1].seq
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := fl.run(ctx, nil); err != nil && ctx.Err() == nil {
				select {
				case errs <- err:
				default:
				}
			}
		}()
		return nil
	}
	for _, j := range jobs {
		if err := start(j); err != nil {
			return err
		}
	}
	if follow && len(c.names) == 0 {
		// Every job, new ones too, until interrupted.
		for {
			select {
			case err := <-errs:
				return err
			case <-ctx.Done():
				wg.Wait()
				return ctx.Err()
			case <-time.After(s.poll()):
			}
			jobs, err := s.jobs(ctx, nil)
			if err != nil {
				if ctx.Err() != nil {
					continue
				}
				return err
			}
			for _, j := range jobs {
				if !started[j.name()] {
					if err := start(j); err != nil {
						return err
					}
				}
			}
		}
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	return ctx.Err()
}
