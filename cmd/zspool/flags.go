package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/zspool/zspool/config"
)

// newFlags makes a command's flag set; pflag lets flags follow the
// positional arguments (`convert RAW --dest DIR`).
func newFlags(name, args string, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: zspool %s %s\n\nFlags:\n", name, args)
		fs.PrintDefaults()
	}
	return fs
}

// missingArgs says what positional argument is missing, then shows the
// usage: a bare list of flags does not tell a user what went wrong.
func missingArgs(fs *pflag.FlagSet, stderr io.Writer, want string) error {
	if fs.NArg() == 0 {
		fmt.Fprintf(stderr, "zspool %s: missing %s\n\n", fs.Name(), want)
	} else {
		fmt.Fprintf(stderr, "zspool %s: want one %s, got %d arguments: %q\n\n", fs.Name(), want, fs.NArg(), fs.Args())
	}
	fs.Usage()
	return &exitError{code: 2, err: errUsageShown}
}

// parseFlags parses and turns --help and flag errors into exit code 2.
func parseFlags(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return &exitError{code: 0, err: errUsageShown}
		}
		return &exitError{code: 2, err: err}
	}
	return nil
}

// parseSize reads a size flag with the config file's syntax (512MiB,
// 16 MiB, 1.5GB, a plain byte count), so a value means the same in both.
func parseSize(s string) (int64, error) {
	v, err := config.ParseSize(s)
	return int64(v), err
}
