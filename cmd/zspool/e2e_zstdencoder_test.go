package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/zspool/zspool/config"
	"github.com/zspool/zspool/pipeline"
)

func TestAnUnknownZstdEncoderFlagIsBadUsageNamingTheFlag(t *testing.T) {
	for _, cmd := range []string{"convert", "bench"} {
		t.Run(cmd, func(t *testing.T) {
			args := []string{cmd, "--zstd-encoder", "fast"}
			if cmd == "convert" {
				args = append(args, "acq.json", "--dest", t.TempDir())
			}
			_, _, err := zspool(t, args...)
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), `--zstd-encoder: "fast" is not one of "klauspost", "lit"`) {
				t.Fatalf("err = %v, want exit 2 naming --zstd-encoder, the value and the choices", err)
			}
		})
	}
}

func TestTheDaemonConfigsZstdEncoderReachesTheDaemonOptions(t *testing.T) {
	for _, enc := range []string{pipeline.EncoderDefault, pipeline.EncoderKlauspost, pipeline.EncoderLit} {
		doc := "spool_dir: /s\nstate_dir: /t\ndestination:\n  url: /d\n"
		if enc != "" {
			doc += "zstd_encoder: " + enc + "\n"
		}
		c, err := config.ParseDaemon([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		o, err := daemonOptions(c)
		if err != nil || o.ZstdEncoder != enc {
			t.Errorf("zstd_encoder %q: daemon options carry %q (%v)", enc, o.ZstdEncoder, err)
		}
	}
}
