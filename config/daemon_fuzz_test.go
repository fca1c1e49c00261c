package config

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzParseDaemon checks that no document panics the parser, that every
// error but a document-level one is a list of *FieldError, and that every
// accepted document renders, through Redacted, as YAML that reads back to
// the same configuration.
func FuzzParseDaemon(f *testing.F) {
	f.Add(fullDaemonConfig)
	f.Add(minimalDaemonConfig)
	f.Add(daemonWith("release:\n  policy: delete\nmetrics:\n  listen: off\n", "part_size: 1.5 GiB\n"))
	f.Add(daemonWith("retry:\n  job_backoff: &b 7s\n  max_backoff: *b\n", ""))
	f.Add(daemonWith("", "s3:\n  secret_key: x\n"))
	f.Add("a: &a [*a]\n")
	f.Add("spool_dir: /s\n\tstate_dir: /t\n")
	f.Fuzz(func(t *testing.T, doc string) {
		t.Setenv(credentialsDirVar, testCredentialsDir)
		d, err := ParseDaemon([]byte(doc))
		if err != nil {
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				for _, e := range j.Unwrap() {
					var fe *FieldError
					if !errors.As(e, &fe) {
						t.Fatalf("joined error %v is not a *FieldError", e)
					}
				}
			}
			return
		}
		back, err := ParseDaemon([]byte(d.Redacted()))
		if err != nil {
			t.Fatalf("Redacted does not parse: %v\n%s", err, d.Redacted())
		}
		if !reflect.DeepEqual(*unmasked(back, d), *d) {
			t.Fatalf("Redacted reads back as %+v, not %+v", *back, *d)
		}
	})
}
