package httpc

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"agt/internal/testprog/selfexec"
)

func TestMain(m *testing.M) {
	selfexec.Main(m, Main)
}

// A path is taken relative to the URL agt serve wrote, -token sends its token, the body goes to
// stdout and the status to stderr, a cookie set goes into the jar; a 4xx exits 1.
func TestAgainstServe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "s", Value: "1"})
		w.Write([]byte(r.Method + " " + r.URL.Path))
	}))
	defer srv.Close()
	run := t.TempDir()
	os.MkdirAll(filepath.Join(run, "serve"), 0o700)
	os.WriteFile(filepath.Join(run, "serve", "url"), []byte(srv.URL+"/\n"), 0o600)
	os.WriteFile(filepath.Join(run, "serve", "token"), []byte("tok\n"), 0o600)
	jar := filepath.Join(run, "jar")

	cmd := selfexec.Command("-token", "-jar", jar, "GET", "/api/agents")
	cmd.Env = append(cmd.Env, "AGT_RUN_DIR="+run)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	if string(out) != "GET /api/agents" || stderr.String() != "HTTP 200\n" {
		t.Errorf("stdout %q, stderr %q", out, stderr.String())
	}
	if b, _ := os.ReadFile(jar); string(b) != "s=1\n" {
		t.Errorf("jar %q", b)
	}

	cmd = selfexec.Command("GET", srv.URL+"/x")
	var ee *exec.ExitError
	if err := cmd.Run(); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("without the token: %v, want exit status 1", err)
	}
}
