package webhook

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agt/internal/testprog/selfexec"
)

func TestMain(m *testing.M) {
	selfexec.Main(m, Main)
}

// The sink writes its URL, records each body and its method and type, and answers the status
// it was given.
func TestSink(t *testing.T) {
	dir := t.TempDir()
	urlFile, bodies := filepath.Join(dir, "url"), filepath.Join(dir, "bodies")
	cmd := selfexec.Command(urlFile, bodies, "503")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var url []byte
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if b, err := os.ReadFile(urlFile); err == nil {
			url = b
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sink never wrote its URL")
		}
	}
	resp, err := http.Post(string(url), "application/json", strings.NewReader(`{"agent":"a","state":"waiting"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("answered %s, want 503", resp.Status)
	}
	b, _ := os.ReadFile(bodies)
	if string(b) != `{"agent":"a","state":"waiting"}`+"\n" {
		t.Errorf("bodies: %q", b)
	}
	b, _ = os.ReadFile(bodies + ".1")
	if string(b) != "POST application/json\n" {
		t.Errorf("bodies.1: %q", b)
	}
}
