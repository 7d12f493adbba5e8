package config

import (
	"net/url"
	"path"
	"strings"
)

// urlMatches reports whether a WebFetch specifier covers the URL u, compared part by part on
// the parsed URL, never as text: "https://x.com:*" does not cover https://x.com.evil.com/.
//   - "domain:HOST" covers any URL whose host is HOST ("*.x.com" for its subdomains).
//   - "SCHEME://HOST[:PORT][/PATH]" covers that scheme and host; PATH exactly (a query, when the
//     specifier has one, too), or with a trailing ":*" as a prefix, "*" any run of characters. A
//     specifier without a port allows the scheme's default port and denies every port.
//
// Hosts compare without case and without a trailing dot; paths after "." and ".." are taken.
func urlMatches(spec string, u *url.URL, deny bool) bool {
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if h, ok := strings.CutPrefix(spec, "domain:"); ok {
		return globMatch(strings.TrimSuffix(strings.ToLower(h), "."), host)
	}
	spec, prefix := strings.CutSuffix(spec, ":*")
	scheme, rest, ok := strings.Cut(spec, "://")
	if !ok {
		return false
	}
	authority, specPath := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, specPath = rest[:i], rest[i:]
	}
	specPath, query, hasQuery := strings.Cut(specPath, "?")
	specHost, specPort := splitHostPort(authority)
	if !globMatch(strings.ToLower(scheme), strings.ToLower(u.Scheme)) ||
		!globMatch(strings.TrimSuffix(strings.ToLower(specHost), "."), host) {
		return false
	}
	port := u.Port()
	if port == "" {
		port = defaultPort(u.Scheme)
	}
	switch {
	case specPort != "":
		if !globMatch(specPort, port) {
			return false
		}
	case !deny && port != defaultPort(u.Scheme):
		return false
	}
	reqPath := u.Path
	if reqPath == "" {
		reqPath = "/"
	}
	reqPath = path.Clean(reqPath)
	switch {
	case prefix && specPath == "":
		return true
	case prefix:
		return strings.HasPrefix(reqPath, specPath)
	case specPath == "":
		specPath = "/"
	}
	if hasQuery && !globMatch(query, u.RawQuery) {
		return false
	}
	return globMatch(specPath, reqPath)
}

func defaultPort(scheme string) string {
	switch strings.ToLower(scheme) {
	case "http", "ws":
		return "80"
	case "https", "wss":
		return "443"
	case "ftp":
		return "21"
	}
	return ""
}

// splitHostPort cuts "host:port" or "[v6]:port"; the port is "" when there is none. (Package
// net would do it, at the cost of its initialisation in every agt start-up.)
func splitHostPort(authority string) (host, port string) {
	if strings.HasPrefix(authority, "[") {
		if i := strings.IndexByte(authority, ']'); i > 0 {
			host, rest := authority[1:i], authority[i+1:]
			return host, strings.TrimPrefix(rest, ":")
		}
		return authority, ""
	}
	if i := strings.LastIndexByte(authority, ':'); i >= 0 {
		return authority[:i], authority[i+1:]
	}
	return authority, ""
}
