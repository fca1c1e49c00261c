package config

import "testing"

func TestRedactURLKeepsTheServerAndDropsWhatMayBeSecret(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"a plain s3 URL is kept whole", "s3://bucket/prefix", "s3://bucket/prefix"},
		{"a query string is replaced", "s3://bucket/p?X-Amz-Signature=abc", "s3://bucket/p?REDACTED"},
		{"a fragment is replaced", "https://h:9000/#tok", "https://h:9000/#REDACTED"},
		{"user info is replaced", "https://admin:pw@minio:9000", "https://REDACTED@minio:9000"},
		{"user info and query both go", "https://u:p@h/x?y=z", "https://REDACTED@h/x?REDACTED"},
		{"a path without a scheme keeps its slashes", "/srv/out", "/srv/out"},
		{"an at sign in the path is not user info", "s3://b/a@b", "s3://b/a@b"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := RedactURL(c.in); got != c.want {
				t.Errorf("RedactURL(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}
