// Package httpc is a small HTTP client for the agt serve scripts: the root test binary registers
// Main as the script command httpc. See Main.
package httpc

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Main is a small HTTP client for the agt serve scripts:
//
//	httpc [-token] [-bearer TOKEN] [-cookie C] [-jar FILE] [-H 'K: V']... [-d BODY] [-cafile PEM] [-show HEADER] METHOD PATH|URL
//
// A PATH (starting with /) is relative to the URL agt serve wrote to $AGT_RUN_DIR/serve/url.
// -token sends the token of $AGT_RUN_DIR/serve/token as a bearer token. The body of the
// answer goes to stdout, "HTTP STATUS" and the headers asked for with -show to stderr; it exits
// 0 for a 2xx or 3xx answer (redirects are not followed), 1 otherwise.
func Main() {
	fs := flag.NewFlagSet("httpc", flag.ExitOnError)
	useToken := fs.Bool("token", false, "send agt serve's token as a bearer token")
	bearer := fs.String("bearer", "", "send this bearer token")
	cookie := fs.String("cookie", "", "send this Cookie header")
	body := fs.String("d", "", "the request's body (Content-Type: application/json unless -H says)")
	caFile := fs.String("cafile", "", "trust this PEM certificate (TLS)")
	var show multiFlag
	fs.Var(&show, "show", "print this response header to stderr (repeatable)")
	jar := fs.String("jar", "", "send the cookies of `FILE` and keep there those the answer sets")
	var headers multiFlag
	fs.Var(&headers, "H", "a request header, K: V (repeatable)")
	fs.Parse(os.Args[1:])
	if fs.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: httpc [flags] METHOD PATH|URL")
		os.Exit(2)
	}
	method, target := fs.Arg(0), fs.Arg(1)
	runDir := os.Getenv("AGT_RUN_DIR")
	if strings.HasPrefix(target, "/") {
		b, err := os.ReadFile(filepath.Join(runDir, "serve", "url"))
		httpcCheck(err)
		target = strings.TrimSuffix(strings.TrimSpace(string(b)), "/") + target
	}
	var rd io.Reader
	if *body != "" {
		rd = strings.NewReader(*body)
	}
	req, err := http.NewRequest(method, target, rd)
	httpcCheck(err)
	if *body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if *useToken {
		b, err := os.ReadFile(filepath.Join(runDir, "serve", "token"))
		httpcCheck(err)
		*bearer = strings.TrimSpace(string(b))
	}
	if *bearer != "" {
		req.Header.Set("Authorization", "Bearer "+*bearer)
	}
	if *jar != "" {
		if b, err := os.ReadFile(*jar); err == nil && *cookie == "" {
			*cookie = strings.TrimSpace(string(b))
		}
	}
	if *cookie != "" {
		req.Header.Set("Cookie", *cookie)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		if k, v = strings.TrimSpace(k), strings.TrimSpace(v); strings.EqualFold(k, "Host") {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	client := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	if *caFile != "" {
		pem, err := os.ReadFile(*caFile)
		httpcCheck(err)
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			httpcCheck(fmt.Errorf("%s: no certificate", *caFile))
		}
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	}
	resp, err := client.Do(req)
	httpcCheck(err)
	defer resp.Body.Close()
	io.Copy(os.Stdout, resp.Body)
	fmt.Fprintf(os.Stderr, "HTTP %d\n", resp.StatusCode)
	for _, h := range show {
		for _, v := range resp.Header.Values(h) {
			fmt.Fprintf(os.Stderr, "%s: %s\n", h, v)
		}
	}
	if *jar != "" {
		var kept []string
		for _, c := range resp.Cookies() {
			kept = append(kept, c.Name+"="+c.Value)
		}
		if len(kept) > 0 {
			httpcCheck(os.WriteFile(*jar, []byte(strings.Join(kept, "; ")+"\n"), 0o600))
		}
	}
	if resp.StatusCode/100 != 2 && resp.StatusCode/100 != 3 {
		os.Exit(1)
	}
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ", ") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

func httpcCheck(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "httpc:", err)
		os.Exit(2)
	}
}
