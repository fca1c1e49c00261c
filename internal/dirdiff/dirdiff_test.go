package dirdiff

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSameNamesTheFirstFileThatDiffersOrIsMissing(t *testing.T) {
	cases := []struct {
		name    string
		got     map[string]string
		wantErr string
	}{
		{"identical trees", map[string]string{"a": "1", "c/d": "22"}, ""},
		{"a file with other bytes", map[string]string{"a": "1", "c/d": "23"}, "c/d: 2 bytes differ from the 2 expected, first at byte 1"},
		{"a missing file", map[string]string{"a": "1"}, "c/d"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, got := t.TempDir(), t.TempDir()
			write(t, want, "a", "1")
			write(t, want, "c/d", "22")
			for rel, content := range c.got {
				write(t, got, rel, content)
			}
			n, err := Same(want, got)
			switch {
			case c.wantErr == "" && (err != nil || n != 2):
				t.Fatalf("n %d, err %v; want 2 files and no error", n, err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("err %v, want one naming %q", err, c.wantErr)
			}
		})
	}
}
