package commands

import (
	"context"
	"io"
	"net/http"
	"strconv"

	"agt/hosts"
)

// hostEvents is /events of an agent of a host: what the host's agt tail gives (its last
// pageEvents events, or those after the seq given), and for a stream then its tail -f, on a
// connection of its own that a dropped link opens again after the last seq sent. The events
// carry "host", as every object from a host does.
func (s *server) hostEvents(w http.ResponseWriter, r *request, h *hostFleet, name string, after int64) {
	es := &eventSender{view: r.URL.Query().Get("view") == "1", last: max(after, 0)}
	fl := &hostFollower{errw: io.Discard}
	if after >= 0 {
		fl.resume(h.label(), name, after)
	} else {
		fl.flags = []string{"--lines=" + strconv.Itoa(pageEvents)}
	}
	if !wantsStream(r.Request) {
		var lines [][]byte
		lw := &lineWriter{fn: func(line []byte) error {
			if t := tagHost(line, h.label()); t != nil {
				lines = append(lines, t)
			}
			return nil
		}}
		said := &boundedBuffer{max: 64 << 10}
		args := append(append([]string{"tail", "--json"}, fl.flags...), fl.after(h.label())...)
		err := h.place.Run(r.Context(), &hosts.Call{Args: append(args, name), Stdout: lw, Stderr: said})
		lw.Close()
		if err != nil {
			httpError(w, http.StatusBadGateway, h.label()+": "+whyNot(err, said))
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		for _, line := range lines {
			if _, b := es.out(line); b != nil {
				w.Write(append(b, '\n'))
			}
		}
		return
	}
	release, ok := s.openStream(w)
	if !ok {
		return
	}
	defer release()
	ctx, stop := context.WithCancel(r.Context())
	defer stop()
	es.sse = startSSE(w)
	if es.sse.flush() != nil {
		return
	}
	defer es.sse.beating(ctx, stop)()
	fl.sink = func(line []byte) error {
		err := es.emit(line)
		if err == nil {
			err = es.sse.flush()
		}
		if err != nil {
			stop() // the client went: so does the host's tail
		}
		return err
	}
	if fl.follow(ctx, h.place, []string{name}) == nil {
		<-ctx.Done() // it ended: the stream stays open, as this machine's do
	}
}
