package webhook

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The test binary is the webhook sink when this variable is set.
const asSink = "WEBHOOK_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asSink) == "1" {
		Main()
	}
	os.Exit(m.Run())
}

// The sink writes its URL, records each body and its method and type, and answers the status
// it was given.
func TestSink(t *testing.T) {
	dir := t.TempDir()
	urlFile, bodies := filepath.Join(dir, "url"), filepath.Join(dir, "bodies")
	cmd := exec.Command(os.Args[0], urlFile, bodies, "503")
	cmd.Env = append(os.Environ(), asSink+"=1")
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
