// Command zspool turns raw instrument acquisitions into OME-Zarr 0.5
// sharded datasets. See README.md for every command.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/zspool/zspool/engine"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"
)

// version is set at build time with -ldflags "-X main.version=…"; without
// it the module's build info is used.
var version = ""

// buildRevision is the VCS commit the binary was built from, or "".
func buildRevision() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, kv := range bi.Settings {
			if kv.Key == "vcs.revision" {
				return kv.Value
			}
		}
	}
	return ""
}

func buildVersion() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	// A build from a checkout: the module has no version, but go build
	// stamps the commit it was built from (and whether the tree differed).
	var rev, modified string
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.modified":
			modified = kv.Value
		}
	}
	if rev != "" && !strings.Contains(v, rev[:min(12, len(rev))]) {
		v += "+" + rev[:min(12, len(rev))]
		if modified == "true" {
			v += "-dirty"
		}
	}
	return v
}

const usage = `zspool turns raw acquisitions into OME-Zarr 0.5 sharded datasets.

Usage:
  zspool convert RAW_OR_MANIFEST --dest DIR   convert one acquisition
  zspool verify DATASET [--raw RAW]           check a dataset (and compare with its raw file)
  zspool bench [--size 2GiB]                  measure the engine on synthetic camera data
  zspool demo [--out ./zspool-demo]           make, convert and verify a small acquisition
  zspool run [--config FILE]                  run the spool daemon (systemd service)
  zspool config check [--config FILE]         validate the daemon config and probe the destination
  zspool jobs [--config FILE]                 list waiting, running, failed and stored acquisitions
  zspool requeue [--config FILE] ID…          put failed acquisitions back in the spool
  zspool version                              print the version and engines

Run "zspool COMMAND --help" for a command's flags.
`

// exitError carries a process exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		code := 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		if !errors.Is(err, errUsageShown) && !errors.Is(err, errLogged) {
			fmt.Fprintln(os.Stderr, "zspool:", err)
		}
		os.Exit(code)
	}
}

var errUsageShown = errors.New("usage shown")

// errLogged marks an error the command has already reported (the daemon
// logs its fatal errors as JSON lines, like every other message of its).
var errLogged = errors.New("already logged")

// logged wraps an error that was already written to the log.
func logged(code int, err error) error {
	return &exitError{code: code, err: fmt.Errorf("%w%w", err, errLogged)}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return &exitError{code: 2, err: errUsageShown}
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "convert":
		return cmdConvert(ctx, rest, stdout, stderr)
	case "verify":
		return cmdVerify(ctx, rest, stdout, stderr)
	case "bench":
		return cmdBench(ctx, rest, stdout, stderr)
	case "demo":
		return cmdDemo(ctx, rest, stdout, stderr)
	case "run":
		return cmdRun(ctx, rest, stdout, stderr)
	case "config":
		return cmdConfig(ctx, rest, stdout, stderr)
	case "jobs":
		return cmdJobs(ctx, rest, stdout, stderr)
	case "requeue":
		return cmdRequeue(ctx, rest, stdout, stderr)
	case "version", "--version":
		return cmdVersion(stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprintf(stderr, "zspool: unknown command %q\n\n%s", cmd, usage)
	return &exitError{code: 2, err: errUsageShown}
}

func cmdVersion(stdout io.Writer) error {
	fmt.Fprintf(stdout, "zspool %s\n", buildVersion())
	if engine.GPUBuilt {
		fmt.Fprintln(stdout, "engines: cpu, gpu (CUDA)")
	} else {
		fmt.Fprintln(stdout, "engines: cpu (built without -tags cuda: no GPU engine)")
	}
	gpu, _ := engine.GPUStatus()
	fmt.Fprintf(stdout, "gpu: %s\n", gpu)
	return nil
}

// newLogger logs human-readable lines to w at the given level.
func newLogger(w io.Writer, level string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(w), lvl)
	return zap.New(core), nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
