package workspace

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

const samplePatch = `diff --git a/README b/README
index ce01362..1d4fd2d 100644
--- a/README
+++ b/README
@@ -1 +1,2 @@
 hello
+--- a line that looks like a header
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
index 257cc56..0000000
--- a/gone.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-foo
-diff --git a/x b/x
diff --git a/.env b/.env
new file mode 100644
--- /dev/null
+++ b/.env
@@ -0,0 +1 @@
+SECRET=1
diff --git "a/sp ace\303\251" "b/sp ace\303\251"
new file mode 100644
index 0000000..e69de29
diff --git a/old b/new
similarity index 90%
rename from old
rename to new
diff --git a/img.png b/img.png
new file mode 100644
index 0000000..8f2a1b3
Binary files /dev/null and b/img.png differ
`

func TestPatchScanner(t *testing.T) {
	for _, chunk := range []int{1, 3, 7, len(samplePatch)} {
		var out bytes.Buffer
		s := &patchScanner{w: &out, drop: func(p string) bool { return p == ".env" }}
		for p := samplePatch; p != ""; {
			n := min(chunk, len(p))
			s.Write([]byte(p[:n]))
			p = p[n:]
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		want := []FileStat{
			{Path: "README", Status: "M", Insertions: 1},
			{Path: "gone.txt", Status: "D", Deletions: 2},
			{Path: "sp aceé", Status: "A"},
			{Path: "new", Status: "R"},
			{Path: "img.png", Status: "A", Binary: true},
		}
		if !reflect.DeepEqual(s.files, want) {
			t.Errorf("chunks of %d: files\n%+v\nwant\n%+v", chunk, s.files, want)
		}
		if strings.Contains(out.String(), "SECRET") || !strings.Contains(out.String(), "+--- a line") {
			t.Errorf("chunks of %d: passed on\n%s", chunk, out.String())
		}
		if got, want := out.Len(), len(samplePatch)-len("diff --git a/.env b/.env\nnew file mode 100644\n--- /dev/null\n+++ b/.env\n@@ -0,0 +1 @@\n+SECRET=1\n"); got != want {
			t.Errorf("chunks of %d: passed on %d bytes, want %d", chunk, got, want)
		}
	}
}

// A content line far longer than any header streams through, counted once.
func TestPatchScannerLongLine(t *testing.T) {
	long := "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+" + strings.Repeat("x", 3*maxHeaderLine) + "\n"
	var out bytes.Buffer
	s := &patchScanner{w: &out}
	s.Write([]byte(long))
	s.Close()
	if out.String() != long || len(s.files) != 1 || s.files[0].Insertions != 1 {
		t.Errorf("files %+v, %d bytes out of %d", s.files, out.Len(), len(long))
	}
}

func FuzzPatchScanner(f *testing.F) {
	f.Add([]byte(samplePatch), 5)
	f.Add([]byte("diff --git \"a/\\x\" b\n@@\n+"), 1)
	f.Fuzz(func(t *testing.T, b []byte, chunk int) {
		if chunk <= 0 {
			chunk = 1
		}
		var out bytes.Buffer
		s := &patchScanner{w: &out}
		for p := b; len(p) > 0; {
			n := min(chunk, len(p))
			s.Write(p[:n])
			p = p[n:]
		}
		s.Close()
		if !bytes.Equal(out.Bytes(), b) {
			t.Fatalf("without drops, the patch must pass through unchanged")
		}
		for _, f := range s.files {
			if f.Insertions < 0 || f.Deletions < 0 {
				t.Fatalf("negative counts: %+v", f)
			}
		}
	})
}

// BenchmarkPatchScanner reads a 10 MB diff of 1000 files, as agt diff --stat does.
func BenchmarkPatchScanner(b *testing.B) {
	var p strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&p, "diff --git a/f%d b/f%d\nindex 1..2 100644\n--- a/f%d\n+++ b/f%d\n@@ -1,100 +1,100 @@\n", i, i, i, i)
		for j := 0; j < 100; j++ {
			p.WriteString("-an old line of some fifty bytes of source code...\n+a new line of some fifty bytes of source code.....\n")
		}
	}
	patch := []byte(p.String())
	b.SetBytes(int64(len(patch)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		s := &patchScanner{}
		for off := 0; off < len(patch); off += 32 << 10 {
			s.Write(patch[off:min(off+32<<10, len(patch))])
		}
		s.Close()
		if len(s.files) != 1000 || s.files[999].Insertions != 100 {
			b.Fatal("miscounted")
		}
	}
}
