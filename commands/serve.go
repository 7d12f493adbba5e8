package commands

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"agt/state"
	"agt/termsafe"
)

// serveHostsWait bounds how long agt serve waits for its hosts' first rows before it prints
// its link: the page then shows them as they come.
const serveHostsWait = 15 * time.Second

// defaultListen is where agt serve listens unless told: this machine only.
const defaultListen = "127.0.0.1:7480"

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "a web page of every agent, to answer them from a browser or a phone",
		UsageText: "agt serve [--listen ADDR] [--tls | --tls-cert FILE --tls-key FILE] [--new-token]\n\n" +
			"Serves a web page of the run directory's agents, to answer them from a browser or a phone.\n\n" +
			"EXAMPLES:\n" +
			"   agt serve\n" +
			"   agt serve --listen 0.0.0.0:7480 --tls\n" +
			"   agt serve --listen :8443 --tls-cert host.crt --tls-key host.key\n" +
			"   curl -s -H \"Authorization: Bearer $(cat ~/.local/state/agt/serve/token)\" http://127.0.0.1:7480/api/agents",
		Description: helpText("serve"),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Aliases: []string{"l"}, Value: defaultListen, Usage: "the `ADDR` (host:port) to listen on; other than loopback, only with TLS", EnvVars: []string{"AGT_SERVE_LISTEN"}},
			&cli.BoolFlag{Name: "tls", Usage: "serve HTTPS with a self-signed certificate that agt makes and keeps", EnvVars: []string{"AGT_SERVE_TLS"}},
			&cli.StringFlag{Name: "tls-cert", Usage: "serve HTTPS with this certificate `FILE` (PEM; with --tls-key)", EnvVars: []string{"AGT_SERVE_TLS_CERT"}},
			&cli.StringFlag{Name: "tls-key", Usage: "the key `FILE` of --tls-cert (PEM)", EnvVars: []string{"AGT_SERVE_TLS_KEY"}},
			&cli.BoolFlag{Name: "new-token", Usage: "make a new token, which ends every browser's session"},
		},
		Action: runServe,
	}
}

func runServe(c *cli.Context) error { return serveOn(c, nil) }

// serveOnHosts is agt serve --host: the agents of every place of --host, each with its host.
func serveOnHosts(c *cli.Context, plan *hostPlan) error { return serveOn(c, plan) }

// serveOn serves the agents of the places of plan (nil: this machine's run directory alone).
// The server's own files (its lock, token and certificate) are this machine's run directory's.
func serveOn(c *cli.Context, plan *hostPlan) error {
	if c.Args().Len() > 0 {
		return usagef(c, "agt serve takes no NAME: it serves every agent")
	}
	listen := c.String("listen")
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return usagef(c, "--listen %q: want HOST:PORT, such as 127.0.0.1:7480 or 0.0.0.0:8443", listen)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return usagef(c, "--listen %q: the port is not a number from 0 to 65535", listen)
	}
	certFile, keyFile := c.String("tls-cert"), c.String("tls-key")
	useTLS := c.Bool("tls") || certFile != "" || keyFile != ""
	if !isLoopback(host) && !useTLS {
		return usagef(c, "--listen %s is reachable from other machines: serve it over TLS (--tls, or --tls-cert and --tls-key) so that the token and the transcripts do not cross the network in clear", listen)
	}
	d, err := openRunDir(c)
	if err != nil {
		return err
	}
	unlock, err := d.LockServe()
	if errors.Is(err, state.ErrServing) {
		url, _ := state.ReadSmall(filepath.Join(d.Root, state.ServeDirName, state.ServeURLFile))
		return fmt.Errorf("another agt serve runs on %s (%s); stop it first, or use another --run-dir", d.Root, termsafe.Line(strings.TrimSpace(string(url))))
	}
	if err != nil {
		return err
	}
	defer unlock()
	token, _, err := loadToken(d, c.Bool("new-token"))
	if err != nil {
		return err
	}
	var cert tls.Certificate
	var made bool
	if useTLS {
		if cert, made, err = servePair(d, certFile, keyFile); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", listen, err)
	}
	defer ln.Close()
	scheme := "http"
	if useTLS {
		scheme = "https"
	}
	ctx, cancel := context.WithCancel(c.Context)
	defer cancel()
	f, err := newFleet(ctx, c, plan)
	if err != nil {
		return err
	}
	s := &server{
		d: d, hub: newServeHub(ctx, f), auth: newServeAuth(token, useTLS), scheme: scheme,
		streams: make(chan struct{}, maxStreams), log: c.App.ErrWriter,
	}
	// The link goes out once the page can list every host's agents (or say it cannot reach
	// one), unless a host takes longer than a handshake should.
	select {
	case <-s.hub.heard:
	case <-time.After(serveHostsWait):
	case <-ctx.Done():
		return c.Context.Err()
	}
	bound := ln.Addr().(*net.TCPAddr)
	if isLoopback(host) {
		s.hosts = loopbackHosts(host, bound.Port)
	}
	page := scheme + "://" + net.JoinHostPort(linkHost(host, bound), strconv.Itoa(bound.Port)) + "/"
	urlPath, err := d.ServePath(state.ServeURLFile)
	if err != nil {
		return err
	}
	if err := state.WriteFileAtomic(urlPath, []byte(page+"\n")); err != nil {
		return err
	}
	defer os.Remove(urlPath)

	what := fmt.Sprintf("%d agents of %s", len(s.hub.list()), d.Root)
	if plan != nil {
		var names []string
		for _, src := range f.sources {
			names = append(names, src.label())
		}
		what = "the agents of " + termsafe.Text(strings.Join(names, ", "))
	}
	fmt.Fprintf(c.App.ErrWriter, "agt serve: %s on %s (Ctrl-C stops)\n", what, page)
	if useTLS {
		how := "yours"
		if made {
			how = "made now, kept in " + filepath.Join(d.Root, state.ServeDirName)
		} else if certFile == "" {
			how = "made earlier, kept in " + filepath.Join(d.Root, state.ServeDirName)
		}
		fmt.Fprintf(c.App.ErrWriter, "agt serve: TLS certificate (%s), SHA-256 fingerprint:\n  %s\n", how, fingerprint(&cert))
	}
	fmt.Fprintf(c.App.ErrWriter, "agt serve: open this link once to sign a browser in (it holds the token; keep it to yourself):\n")
	fmt.Fprintf(c.App.Writer, "%s?token=%s\n", page, token)

	srv := &http.Server{
		Handler:           s.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    32 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		// A browser that meets a self-signed certificate drops the handshake: not news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	if useTLS {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	done := make(chan error, 1)
	go func() {
		if useTLS {
			done <- srv.ServeTLS(ln, "", "")
		} else {
			done <- srv.Serve(ln)
		}
	}()
	select {
	case err = <-done:
		return fmt.Errorf("serve on %s: %w", listen, err)
	case <-c.Context.Done():
	}
	cancel() // ends the streams, whose handlers Shutdown would otherwise wait for
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer scancel()
	if srv.Shutdown(sctx) != nil {
		srv.Close()
	}
	return c.Context.Err()
}

// isLoopback reports whether host (of a listen address) is this machine only.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackHosts are the Host headers of a loopback server on port.
func loopbackHosts(host string, port int) map[string]bool {
	hosts := map[string]bool{}
	for _, h := range []string{host, "localhost", "127.0.0.1", "::1"} {
		hosts[strings.ToLower(net.JoinHostPort(h, strconv.Itoa(port)))] = true
	}
	return hosts
}

// linkHost is the host the printed link names: the one listened on, or for every address,
// the first that another machine can reach (the host name when there is none).
func linkHost(host string, bound *net.TCPAddr) string {
	if host != "" && !bound.IP.IsUnspecified() {
		return host
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
				return n.IP.String()
			}
		}
	}
	return hostName()
}

// hostName is this machine's name, "localhost" when it has none.
func hostName() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "localhost"
}
